import {
  SENSITIVITY_RANK,
  SHARED_OWNERSHIP_KEY,
  exclusionKeys,
  occurredRange,
  reduceClauses,
  scopeGroups,
  type IndexFilter,
  type IndexScope,
  type ReadClause,
  type ReadExclusions,
} from '@elma/domain';
import { millis, type MemoryDocument } from './mapping';

type Field = Exclude<keyof MemoryDocument, 'record' | 'vector' | 'text'>;
type Value = string | number;

/**
 * The query DSL this target emits: filter context only (no scoring), from
 * term-level queries and `bool`. Kept this small so that `dsl-eval.testing`
 * can evaluate all of it and the property tests can prove it equal to
 * `matchesFilter` without a server.
 */
export type EsQuery =
  | { term: Partial<Record<Field, Value>> }
  | { terms: Partial<Record<Field, Value[]>> }
  | { range: Partial<Record<Field, { lte?: number; gt?: number; gte?: number; lt?: number }>> }
  | { exists: { field: Field } }
  | { bool: EsBool };

export interface EsBool {
  filter?: EsQuery[];
  /** Always with `minimum_should_match: 1`: beside `filter`, Elasticsearch would otherwise treat `should` as optional. */
  should?: EsQuery[];
  minimum_should_match?: 1;
  must_not?: EsQuery[];
}

const terms = (field: Field, values: readonly Value[]): EsQuery => ({ terms: { [field]: [...values] } });
const term = (field: Field, value: Value): EsQuery => ({ term: { [field]: value } });
const missing = (field: Field): EsQuery => ({ bool: { must_not: [{ exists: { field } }] } });
const anyOf = (...queries: EsQuery[]): EsQuery => ({ bool: { should: queries, minimum_should_match: 1 } });
/** `field` missing (an open end) or after `at`. */
const openOrAfter = (field: Field, at: number): EsQuery => anyOf(missing(field), { range: { [field]: { gt: at } } });

/**
 * Compiles the pushed-down policy filter to an Elasticsearch `bool` query,
 * the twin of the SQLite target (`sqlite/filter-sql`): same predicates, same
 * clause reduction. Returns undefined when the filter can match nothing (an
 * empty allow-list): default deny, without asking the cluster.
 */
export function compileFilterDsl(filter: IndexFilter): EsQuery | undefined {
  const must: EsQuery[] = [];
  const mustNot: EsQuery[] = [];

  if (filter.statuses.length === 0) return undefined;
  must.push(terms('status', filter.statuses));

  if (filter.kinds) {
    if (filter.kinds.length === 0) return undefined;
    must.push(terms('kind', filter.kinds));
  }

  must.push({ range: { sensitivity_rank: { lte: SENSITIVITY_RANK[filter.maxSensitivity] } } });

  if (filter.purposes) {
    if (filter.purposes.length === 0) return undefined;
    must.push(terms('purposes', filter.purposes));
  }

  if (filter.asOf !== undefined) {
    const asOf = millis(filter.asOf, 'asOf');
    must.push({ range: { valid_from: { lte: asOf } } }, openOrAfter('valid_to', asOf));
  }

  // Transaction time: the version that was current then, or else the current version.
  if (filter.knownAsOf !== undefined) {
    const knownAsOf = millis(filter.knownAsOf, 'knownAsOf');
    must.push({ range: { tx_from: { lte: knownAsOf } } }, openOrAfter('tx_to', knownAsOf));
  } else {
    must.push(missing('tx_to'));
  }

  must.push(openOrAfter('expires_at', millis(filter.now, 'now')));

  if (filter.scope) {
    const scope = compileScope(filter.scope);
    if (scope === undefined) return undefined;
    must.push(...scope);
  }

  if (filter.workingSession !== undefined)
    must.push(anyOf({ bool: { must_not: [term('kind', 'working')] } }, term('session', filter.workingSession)));

  if (filter.exclude) mustNot.push(...compileExclusions(filter.exclude));

  let policy: EsQuery[] | undefined;
  if (filter.clauses) {
    if (filter.clauses.length === 0) return undefined;
    const reduced = reduceClauses(filter.clauses, filter);
    // A purpose every clause requires is checked once, outside the OR.
    const purposes = new Set(reduced.map((c) => c.purpose));
    const shared = purposes.size === 1 ? [...purposes][0] : undefined;
    if (shared !== undefined) must.push(term('purposes', shared));
    const compiled = reduced.map((c) => compileClause(shared === undefined ? c : { ...c, purpose: undefined }, filter.maxSensitivity));
    // A clause with no predicate left admits every record the rest admits: the OR is then always true.
    if (!compiled.some((c) => c.length === 0)) policy = compiled.map((c) => (c.length === 1 ? c[0] : { bool: { filter: c } }));
  }

  return {
    bool: {
      filter: must,
      ...(policy ? { should: policy, minimum_should_match: 1 as const } : {}),
      ...(mustNot.length > 0 ? { must_not: mustNot } : {}),
    },
  };
}

/**
 * One allow clause as the predicates that must all hold. An empty list in it
 * admits nothing; `terms` over an empty list means exactly that in
 * Elasticsearch (it matches no document), so it is emitted as it is.
 */
function compileClause(clause: ReadClause, globalMax: ReadClause['maxSensitivity']): EsQuery[] {
  const predicates: EsQuery[] = [];
  if (clause.kinds) predicates.push(terms('kind', clause.kinds));
  if (clause.statuses) predicates.push(terms('status', clause.statuses));
  if (clause.retentionClasses) predicates.push(terms('retention_class', clause.retentionClasses));
  // The global cap already holds; a clause repeats it only when it is stricter.
  if (SENSITIVITY_RANK[clause.maxSensitivity] < SENSITIVITY_RANK[globalMax]) {
    predicates.push({ range: { sensitivity_rank: { lte: SENSITIVITY_RANK[clause.maxSensitivity] } } });
  }
  // A record derived from another owner's records is theirs too: an owner-only clause never admits it.
  if (clause.owner !== undefined)
    predicates.push(term('owner', clause.owner), { bool: { must_not: [term('lineage', SHARED_OWNERSHIP_KEY)] } });
  // A record without a project has no `project` field, which no `term` matches: it never matches a project clause.
  if (clause.project !== undefined) predicates.push(term('project', clause.project));
  if (clause.purpose !== undefined) predicates.push(term('purposes', clause.purpose));
  return predicates;
}

/**
 * The caller's scope (`IndexScope`): for each of its keys one of its values
 * among the document's `scope` keys (`scopeKeys`), and the valid-time range.
 * Undefined when it admits nothing (an empty list).
 */
function compileScope(scope: IndexScope): EsQuery[] | undefined {
  const groups = scopeGroups(scope);
  if (groups.some((group) => group.length === 0)) return undefined;
  const out = groups.map((group) => terms('scope', group));
  const { after, before } = occurredRange(scope);
  if (after !== undefined || before !== undefined)
    out.push({
      range: { valid_from: { ...(after !== undefined ? { gte: after } : {}), ...(before !== undefined ? { lt: before } : {}) } },
    });
  return out;
}

/**
 * Legal holds: a record is withheld when a held key names it or any of its
 * ancestors (`lineage`, see `restrictionKeys`). Its own id, owner and project
 * are matched too, for documents indexed before `lineage` was kept. A record
 * without a project has no `project` field, which `terms` never matches.
 */
function compileExclusions(exclude: ReadExclusions): EsQuery[] {
  const keys = exclusionKeys(exclude);
  if (keys.length === 0) return [];
  const out: EsQuery[] = [terms('lineage', keys)];
  if (exclude.ids && exclude.ids.length > 0) out.push(terms('id', exclude.ids));
  if (exclude.owners && exclude.owners.length > 0) out.push(terms('owner', exclude.owners));
  if (exclude.projects && exclude.projects.length > 0) out.push(terms('project', exclude.projects));
  return out;
}

/**
 * The BM25 route's search body: English and CJK analyses of the text scored
 * together (`most_fields`), the policy filter in filter context so it
 * restricts without scoring. Undefined when the route has nothing to do: no
 * text, or a filter that admits nothing.
 */
export function bm25Query(text: string, filter: IndexFilter) {
  const compiled = compileFilterDsl(filter);
  if (compiled === undefined || text.trim() === '') return undefined;
  return {
    query: {
      bool: {
        must: [{ multi_match: { query: text, fields: ['text', 'text.cjk'], type: 'most_fields' as const } }],
        filter: [compiled],
      },
    },
  };
}

/** Elasticsearch's cap on `num_candidates`. */
const MAX_CANDIDATES = 10_000;

/**
 * The dense route's `knn` section. The policy filter goes into `knn.filter`,
 * applied while the HNSW graph is searched (pre-filtering): a post-filter
 * would drop hits after the top k were chosen and return fewer than k, or
 * none, when the caller may see only a few records. Undefined when the
 * filter admits nothing.
 */
export function knnClause(vector: Float32Array, k: number, numCandidates: number, filter: IndexFilter, model?: string) {
  if (!Number.isInteger(k) || k < 1) throw new RangeError('k must be a positive integer');
  if (!Number.isInteger(numCandidates) || numCandidates < k || numCandidates > MAX_CANDIDATES) {
    throw new RangeError(`numCandidates must be an integer from k to ${MAX_CANDIDATES}`);
  }
  const compiled = compileFilterDsl(filter);
  if (compiled === undefined) return undefined;
  // Only vectors of the query's model: two models' vectors are never compared in one kNN search.
  const scoped = model === undefined ? compiled : { bool: { filter: [compiled, { term: { vector_model: model } }] } };
  return { knn: { field: 'vector' as const, query_vector: Array.from(vector), k, num_candidates: numCandidates, filter: scoped } };
}
