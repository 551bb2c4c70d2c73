/**
 * The request bodies the Elasticsearch adapter sends and the pure decisions
 * behind them (which versions an upsert writes or closes, how routes fuse,
 * how usage merges into a record), kept apart from the client so they are
 * checked without a server (requests.unit.spec.ts).
 */
import { createHash } from 'node:crypto';
import {
  DEFAULT_TEXT_ANALYSIS,
  groupBy,
  isHan,
  queryTerms,
  CONVERSATION_GAP_MS,
  RRF_K,
  fuse as fuseRoutes,
  scriptGroupOf,
  type ScriptGroup,
  transactionTime,
  type Fusion,
  type RouteContributions,
  type HybridQuery,
  type IndexFilter,
  type IndexedMemory,
  type LineageEntry,
  type ListQuery,
  type MemoryKind,
  type MemoryRecord,
} from '@elma/domain';
import { bm25Query, compileFilterDsl, knnClause, type EsQuery } from './filter-dsl';
import { UNNAMED_MODEL, millis, toDocument, vectorFields, type MemoryDocument } from './mapping';

/** Elasticsearch refuses document ids over 512 bytes; longer record ids are hashed (lookups go by the `id` field). */
const MAX_ID_BYTES = 400;

const safeId = (key: string): string =>
  Buffer.byteLength(key) <= MAX_ID_BYTES ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`;

/** One document per version: the same version again overwrites it, which makes a replayed upsert idempotent. */
export const versionDocId = (id: string, version: number): string => safeId(`${id}#v${version}`);

/** One usage document per record id. */
export const usageDocId = (id: string): string => safeId(id);

/** Lucene's largest term, in UTF-8 bytes. */
const MAX_TERM_BYTES = 32_766;

/**
 * Whether a record can have this id: a longer one cannot be indexed in the keyword `id` field, and a `term`
 * query on it is refused (HTTP 400), so a lookup by a caller's over-long id must not reach the server.
 */
export const storableId = (id: string): boolean => Buffer.byteLength(id) <= MAX_TERM_BYTES;

/** A stored version as the upsert planner needs to see it. */
export interface StoredVersion {
  _id: string;
  id: string;
  version: number;
  tx_from: number;
  /** Null while the version is current. */
  tx_to: number | null;
}

/** The fields `StoredVersion` is read from. */
export const STORED_VERSION_FIELDS = ['id', 'version', 'tx_from', 'tx_to'] as const;

/** Every stored version of these ids, in a stable order for `search_after` paging. */
export function versionsQuery(ids: readonly string[], size: number, after?: unknown[]) {
  return {
    query: { bool: { filter: [{ terms: { id: [...ids] } }] } },
    _source: [...STORED_VERSION_FIELDS],
    sort: [{ id: 'asc' as const }, { version: 'asc' as const }],
    size,
    ...(after ? { search_after: after } : {}),
  };
}

export type BulkOperation = { index: { _id: string } } | { update: { _id: string } } | MemoryDocument | { doc: { tx_to: number } };

export interface UpsertPlan {
  /** Bulk body: closes of stored versions first, then the new documents. */
  operations: BulkOperation[];
}

export interface PlanOptions {
  /** Insertion order for the next document; called once per document, in order. */
  nextSeq: () => number;
  countTokens: (text: string) => number;
  /** The index's configured embedder model (`unnamed` by default): a vector of another model is not stored. */
  model?: string;
  /** Epoch ms: when documents written without a vector became pending (default: now). */
  now?: number;
}

/**
 * The port's upsert rules over what the index already holds, call order
 * kept within the call (like the SQLite partition's transaction): the same
 * version again replaces its document; a higher version closes the current
 * one at its own transaction time and becomes current; a lower one, or one
 * no higher than a version already stored when none is current, changes
 * nothing. Should an earlier write have failed half-way and left two current
 * versions of an id, the lower ones are closed here too.
 *
 * Closes come before the new documents in the bulk body (one shard applies
 * them in order): should the request fail in between, a record is briefly
 * without a current version rather than current in two, possibly
 * differently governed, versions; the same call again completes it.
 */
export function planUpsert(stored: readonly StoredVersion[], memories: readonly IndexedMemory[], options: PlanOptions): UpsertPlan {
  interface State {
    current?: { _id: string; version: number };
    maxVersion: number;
  }
  const states = new Map<string, State>();
  const closes = new Map<string, number>();
  for (const [id, versions] of groupBy(stored, (v) => v.id)) {
    const current = versions.filter((v) => v.tx_to === null).sort((a, b) => b.version - a.version);
    const [top, ...stale] = current;
    for (const v of stale) closes.set(v._id, top.tx_from);
    states.set(id, { current: top && { _id: top._id, version: top.version }, maxVersion: Math.max(...versions.map((v) => v.version)) });
  }

  const pending = new Map<string, MemoryDocument>();
  for (const { record, vector, model } of memories) {
    const state = states.get(record.id) ?? { maxVersion: 0 };
    states.set(record.id, state);
    const { current } = state;
    if (current && current.version > record.version) continue;
    if (!current && state.maxVersion >= record.version) continue;
    const txFrom = millis(transactionTime(record), 'revisedAt');
    if (current && current.version < record.version) {
      const own = pending.get(current._id);
      if (own) own.tx_to = txFrom;
      else closes.set(current._id, txFrom);
    }
    const _id = versionDocId(record.id, record.version);
    // Delete first so that a replaced document written earlier in this call moves to the end (insertion order).
    pending.delete(_id);
    // A vector of another model than the index's is not kept: the document waits for one of the right model.
    const kept = (model ?? options.model ?? UNNAMED_MODEL) === (options.model ?? UNNAMED_MODEL) ? vector : undefined;
    pending.set(_id, {
      ...toDocument(record, kept, options.countTokens(record.content.text), options.model, options.now),
      seq: options.nextSeq(),
    });
    state.current = { _id, version: record.version };
    state.maxVersion = Math.max(state.maxVersion, record.version);
  }

  const operations: BulkOperation[] = [];
  for (const [_id, txTo] of closes) operations.push({ update: { _id } }, { doc: { tx_to: txTo } });
  for (const [_id, doc] of pending) operations.push({ index: { _id } }, doc);
  return { operations };
}

/** Bulk bodies of at most `maxOperations` actions, never splitting an action from its source line. */
export function chunkOperations(operations: readonly BulkOperation[], maxActions: number): BulkOperation[][] {
  const chunks: BulkOperation[][] = [];
  for (let i = 0; i < operations.length; i += maxActions * 2) chunks.push(operations.slice(i, i + maxActions * 2));
  return chunks;
}

/** One item of a bulk response: the action's name mapped to its result. */
export type BulkItem = Partial<Record<string, { _id?: string | null; status: number; error?: { type?: string } }>>;

/**
 * A bulk response's failures, described by document id and error type only:
 * Elasticsearch's `reason` can quote the document (a mapping error previews
 * the field's value), and erasure cannot reach a log line.
 */
export function bulkFailures(items: readonly BulkItem[]): string[] {
  const failures: string[] = [];
  for (const item of items) {
    for (const [action, result] of Object.entries(item)) {
      if (result?.error) failures.push(`${action} ${result._id ?? '?'}: ${result.error.type ?? 'error'} (${result.status})`);
    }
  }
  return failures;
}

/** Current versions only (`tx_to` missing). */
export const CURRENT: EsQuery = { bool: { must_not: [{ exists: { field: 'tx_to' } }] } };

/** The current version of one record; the highest one should a failed write have left two. */
export function getQuery(id: string) {
  return {
    query: { bool: { filter: [{ term: { id } }, CURRENT] } },
    sort: [{ version: 'desc' as const }],
    size: 1,
  };
}

/** Documents of these ids (any version) that hold a vector, a page at a time like `versionsQuery`. */
export function vectorVersionsQuery(ids: readonly string[], size: number, after?: unknown[]) {
  const query = versionsQuery(ids, size, after);
  return { ...query, query: { bool: { filter: [...query.query.bool.filter, { exists: { field: 'vector_model' } }] } } };
}

/**
 * Current documents outside `exclude` whose text holds every word of `text`
 * (as `SqliteMemoryIndex.leftovers` matches them): candidates for holding it verbatim.
 */
export function sameWordsQuery(text: string, exclude: readonly string[], size: number) {
  return {
    query: {
      bool: {
        filter: [CURRENT],
        must: [{ match: { text: { query: text, operator: 'and' as const } } }],
        must_not: [{ terms: { id: [...exclude] } }],
      },
    },
    _source: ['record.content.text'],
    size,
  };
}

/** One page of current versions in insertion order. */
export function pageQuery(size: number, source: readonly string[], after?: unknown[]) {
  return {
    query: CURRENT,
    _source: [...source],
    sort: [{ seq: 'asc' as const }, { id: 'asc' as const }],
    size,
    ...(after ? { search_after: after } : {}),
  };
}

/** The fields `lineageEntryOf` reads: no content. */
export const LINEAGE_SOURCE = [
  'id',
  'kind',
  'owner',
  'project',
  'recorded_at',
  'expires_at',
  'record.subject',
  'record.provenance.rule',
  'record.provenance.sourceEventIds',
  'record.provenance.parentIds',
  'vector_model',
] as const;

/**
 * One page of the current documents `MemoryIndex.lineageOf` asks for, in insertion order: by id, by a
 * lineage key naming one of the ids (`restrictionKeys`, which also names ancestors: the caller keeps
 * only direct inputs), or by subject or owner.
 */
export function lineageOfQuery(ids: readonly string[], subjects: readonly string[], size: number, after?: unknown[]) {
  const should: EsQuery[] = [];
  if (ids.length > 0) should.push({ terms: { id: [...ids] } }, { terms: { lineage: ids.map((id) => `id:${id}`) } });
  if (subjects.length > 0) should.push({ terms: { subject: [...subjects] } }, { terms: { owner: [...subjects] } });
  const query: EsQuery = { bool: { filter: [CURRENT, { bool: { should, minimum_should_match: 1 } }] } };
  return {
    query,
    _source: [...LINEAGE_SOURCE, 'seq'],
    sort: [{ seq: 'asc' as const }, { id: 'asc' as const }],
    size,
    ...(after ? { search_after: after } : {}),
  };
}

/** Whether a lineage entry is one `lineageOf` asked for (its lineage keys may have named only an ancestor). */
export function lineageMatches(entry: LineageEntry, ids: ReadonlySet<string>, subjects: ReadonlySet<string>): boolean {
  return (
    ids.has(entry.id) ||
    entry.parentIds.some((id) => ids.has(id)) ||
    entry.sourceEventIds.some((id) => ids.has(id)) ||
    subjects.has(entry.subject) ||
    subjects.has(entry.owner)
  );
}

export interface LineageSource {
  id: string;
  kind: MemoryKind;
  owner: string;
  project?: string | null;
  recorded_at: number;
  expires_at?: number | null;
  record: { subject: string; provenance: { rule: string; sourceEventIds: string[]; parentIds: string[] } };
  vector_model?: string;
}

export function lineageEntryOf(source: LineageSource): LineageEntry {
  return {
    id: source.id,
    kind: source.kind,
    subject: source.record.subject,
    owner: source.owner,
    rule: source.record.provenance.rule,
    sourceEventIds: source.record.provenance.sourceEventIds,
    parentIds: source.record.provenance.parentIds,
    recordedAt: new Date(source.recorded_at).toISOString(),
    expiresAt: source.expires_at === null || source.expires_at === undefined ? null : new Date(source.expires_at).toISOString(),
    ...(source.project !== null && source.project !== undefined ? { project: source.project } : {}),
    ...(source.vector_model !== undefined ? { vectorModel: source.vector_model } : {}),
  };
}

/**
 * One page of `MemoryIndex.list`: the compiled filter and the listing's own conditions in filter context,
 * sorted by first recording then id (the twin of the SQLite target's memories_listing order), resuming
 * `search_after` the position given. Undefined when the filter admits nothing.
 */
export function listQuery(query: Omit<ListQuery, 'tenant'>) {
  const compiled = compileFilterDsl(query.filter);
  if (compiled === undefined) return undefined;
  const filter: EsQuery[] = [compiled];
  if (query.subject !== undefined) filter.push({ term: { subject: query.subject } });
  if (query.working) {
    const { owner, session } = query.working;
    const should: EsQuery[] = [{ bool: { must_not: [{ term: { kind: 'working' } }] } }, { term: { owner } }];
    if (session !== undefined) should.push({ term: { session } });
    filter.push({ bool: { should, minimum_should_match: 1 } });
  }
  return {
    query: { bool: { filter } },
    _source: ['id', 'record'],
    sort: [{ recorded_at: 'asc' as const }, { id: 'asc' as const }],
    size: query.limit,
    ...(query.after ? { search_after: [millis(query.after.recordedAt, 'after.recordedAt'), query.after.id] } : {}),
  };
}

/** Every stored version of one record, oldest first, a page at a time. */
export function historyQuery(id: string, size: number, after?: unknown[]) {
  return {
    query: { bool: { filter: [{ term: { id } }] } },
    _source: ['id', 'record'],
    sort: [{ version: 'asc' as const }],
    size,
    ...(after ? { search_after: after } : {}),
  };
}

/** Current versions stating this fact (or procedure), oldest transaction time first as the SQLite target orders them. */
export function currentFactsQuery(factKey: string, size: number, after?: unknown[]) {
  return {
    query: { bool: { filter: [{ term: { fact_key: factKey } }, CURRENT] } },
    _source: ['record'],
    sort: [{ tx_from: 'asc' as const }, { seq: 'asc' as const }],
    size,
    ...(after ? { search_after: after } : {}),
  };
}

/** Each route returns more than `limit` so fusion can promote a hit both routes agree on (as in the SQLite target). */
export const routeDepth = (limit: number): number => Math.min(Math.max(limit * 2, 20), 1_000);

/** Candidates the HNSW search visits per route: more than k, for recall under a selective filter. */
export const numCandidates = (depth: number): number => Math.min(Math.max(depth * 4, 100), 10_000);

/**
 * The query text sent to BM25, capped: a pasted document must not become a
 * query of thousands of terms (the SQLite target caps it at 64 distinct tokens).
 */
const MAX_QUERY_CHARS = 1_000;

/**
 * What the BM25 route asks Elasticsearch for: the query's words less English
 * and Chinese stop words (`queryTerms`, which never empties a query and keeps
 * a capitalised name), capped. Stemming is left to the `english` analyzer,
 * which does it on both sides; its own stop list is English only, hence this
 * step for Chinese ("我们的交付风险是什么" asks for 交付 风险). Adjacent Chinese
 * words are written together again, so the `cjk` sub-field still forms its
 * character bigrams across them as it does in the documents.
 */
export function bm25Text(text: string): string {
  const terms = queryTerms(text.slice(0, MAX_QUERY_CHARS), { ...DEFAULT_TEXT_ANALYSIS, stem: false });
  return terms.reduce((joined, term, i) => (i > 0 && isHan(term) && isHan(terms[i - 1]) ? joined + term : `${joined} ${term}`), '').trim();
}

/** What a route's hit carries: the record id, and its text, from which fusion reads the kind of writing (`fuseByScript`). */
const ROUTE_SOURCE = ['id', 'record.content.text'];

export interface RouteBodies {
  bm25?: object;
  knn?: object;
}

/**
 * The two routes of a hybrid search, each carrying the compiled policy
 * filter (BM25 in filter context, kNN as `knn.filter`, i.e. pre-filtering):
 * no record the caller may not see is ever a candidate. A route with
 * nothing to do (no text, no or a zero vector, a filter that admits
 * nothing) is absent. Hits carry only the record id; the documents of the
 * fused top hits are fetched afterwards.
 */
export function routeBodies(query: HybridQuery, model?: string): RouteBodies {
  const depth = routeDepth(query.limit);
  const bodies: RouteBodies = {};
  const bm25 = bm25Query(bm25Text(query.text), query.filter);
  if (bm25) bodies.bm25 = { ...bm25, size: depth, _source: ROUTE_SOURCE };
  if (query.vector && query.vector.some((x) => x !== 0)) {
    const knn = knnClause(query.vector, depth, numCandidates(depth), query.filter, model);
    if (knn) bodies.knn = { ...knn, size: depth, _source: ROUTE_SOURCE };
  }
  return bodies;
}

/**
 * Both routes fused by the server (`retriever.rrf`) instead of by ELMA; used
 * only when both routes are active. Same rank constant and window as ELMA's
 * own fusion, so the two modes rank alike up to ties.
 */
export function serverRrfBody(query: HybridQuery, model?: string): object | undefined {
  const routes = routeBodies(query, model);
  if (!routes.bm25 || !routes.knn) return undefined;
  const depth = routeDepth(query.limit);
  const { query: bm25 } = routes.bm25 as { query: object };
  const { knn } = routes.knn as { knn: object };
  return {
    retriever: { rrf: { retrievers: [{ standard: { query: bm25 } }, { knn }], rank_window_size: depth, rank_constant: RRF_K } },
    size: Math.min(query.limit, depth),
    _source: ['id'],
  };
}

/** A route's hits, best first: the document id, its record id and the route's raw score. */
export interface RouteHit {
  _id: string;
  id: string;
  /** BM25: Elasticsearch's score; kNN: the cosine similarity (see `knnCosine`). */
  score: number;
  /** The record's text, when the route returned it: fusion groups candidates by its kind of writing. */
  text?: string;
}

export interface FusedHit {
  _id: string;
  id: string;
  score: number;
  bm25Rank?: number;
  vectorRank?: number;
  bm25Score?: number;
  contributions?: RouteContributions;
}

/** Elasticsearch scores a `cosine` dense_vector hit (1 + cosine) / 2; the cosine back. */
export const knnCosine = (score: number): number => 2 * score - 1;

/**
 * ELMA's fusion (domain `fuse`) over the routes' document ids, with each hit's
 * 1-based rank in each route and its BM25 score.
 */
export function fuse(bm25: readonly RouteHit[], knn: readonly RouteHit[], limit: number, fusion?: Fusion): FusedHit[] {
  const recordIds = new Map([...bm25, ...knn].map((h) => [h._id, h.id]));
  const bm25Score = new Map(bm25.map((h) => [h._id, h.score]));
  return fuseRoutes(
    { bm25: bm25.map((h) => ({ id: h._id, score: h.score })), dense: knn.map((h) => ({ id: h._id, score: h.score })) },
    fusion,
    scriptsOf([...bm25, ...knn]),
  )
    .slice(0, Math.max(limit, 0))
    .map(({ id: _id, score, bm25Rank, vectorRank, contributions }) => ({
      _id,
      id: recordIds.get(_id)!,
      score,
      contributions,
      ...(bm25Rank !== undefined ? { bm25Rank, bm25Score: bm25Score.get(_id) } : {}),
      ...(vectorRank !== undefined ? { vectorRank } : {}),
    }));
}

/** The fields of a record `neighbours` seeks from. */
export const NEIGHBOUR_SOURCE = ['id', 'seq', 'subject', 'session', 'valid_from'] as const;
export interface NeighbourSource {
  id: string;
  seq?: number;
  subject?: string;
  session?: string | null;
  valid_from: number;
}

/** The admitted episodic versions of these ids (at most one each: the filter selects the version). */
export function neighbourSelfQuery(ids: readonly string[], filter: IndexFilter) {
  const compiled = compileFilterDsl(filter);
  if (compiled === undefined) return undefined;
  return {
    query: { bool: { filter: [compiled, { term: { kind: 'episodic' } }, { terms: { id: [...ids] } }] } },
    _source: [...NEIGHBOUR_SOURCE],
    size: ids.length,
  };
}

/**
 * The admitted episodic record just before (or after) `of` in its
 * conversation: same subject, same session or, both without one, at most
 * CONVERSATION_GAP_MS apart; ordered by valid time then insertion order
 * (`seq`; the twin of the SQLite target's seek by rowid). The policy filter is part of the query, so a record
 * the caller may not see is passed over as if absent.
 */
export function neighbourQuery(
  of: NeighbourSource & { subject: string; seq: number },
  direction: 'previous' | 'next',
  filter: IndexFilter,
) {
  const compiled = compileFilterDsl(filter);
  if (compiled === undefined) return undefined;
  const at = of.valid_from;
  const before = direction === 'previous';
  const session = of.session ?? null;
  const beyond = before ? { lt: at } : { gt: at };
  const order: 'asc' | 'desc' = before ? 'desc' : 'asc';
  const sort: Record<string, { order: 'asc' | 'desc' }>[] = [{ valid_from: { order } }, { seq: { order } }];
  return {
    query: {
      bool: {
        filter: [
          compiled,
          { term: { kind: 'episodic' } },
          { term: { subject: of.subject } },
          session === null ? { bool: { must_not: [{ exists: { field: 'session' } }] } } : { term: { session } },
          ...(session === null
            ? [{ range: { valid_from: before ? { gte: at - CONVERSATION_GAP_MS } : { lte: at + CONVERSATION_GAP_MS } } }]
            : []),
          {
            bool: {
              should: [
                { range: { valid_from: beyond } },
                { bool: { filter: [{ term: { valid_from: at } }, { range: { seq: before ? { lt: of.seq } : { gt: of.seq } } }] } },
              ],
              minimum_should_match: 1,
            },
          },
        ],
      },
    },
    sort,
    size: 1,
  };
}

/** A usage document. */
export interface UsageDocument {
  id: string;
  retrieved: number;
  adopted: number;
  last_used_at: number | null;
}

/** A usage document as read for an update, with the version it must still have. */
export interface VersionedUsage {
  doc: UsageDocument;
  seqNo: number;
  primaryTerm: number;
}

/**
 * Adds one use to each record's counts (each id once per call), as a
 * read-modify-write guarded by the sequence number that was read
 * (`if_seq_no`), and `create` for a first use: a concurrent use makes a
 * 409 and that id is read and written again, so uses add up without a
 * server-side script (which hardened clusters often disable).
 */
export function usageOperations(
  ids: readonly string[],
  use: 'retrieved' | 'adopted',
  at: number,
  stored: ReadonlyMap<string, VersionedUsage>,
): object[] {
  return [...new Set(ids)].flatMap((id): object[] => {
    const _id = usageDocId(id);
    const current = stored.get(id);
    if (!current) {
      return [
        { create: { _id } },
        { id, retrieved: use === 'retrieved' ? 1 : 0, adopted: use === 'adopted' ? 1 : 0, last_used_at: at } satisfies UsageDocument,
      ];
    }
    const { doc } = current;
    return [
      { index: { _id, if_seq_no: current.seqNo, if_primary_term: current.primaryTerm } },
      {
        ...doc,
        [use]: doc[use] + 1,
        last_used_at: doc.last_used_at === null ? at : Math.max(doc.last_used_at, at),
      } satisfies UsageDocument,
    ];
  });
}

/** Record ids of the bulk items that lost a race (409), to be read and written again; other failures are described. */
export function usageConflicts(items: readonly BulkItem[], ids: readonly string[]) {
  const byDocId = new Map([...new Set(ids)].map((id) => [usageDocId(id), id]));
  const conflicts: string[] = [];
  const others: BulkItem[] = [];
  for (const item of items) {
    const result = Object.values(item)[0];
    if (!result) continue;
    if (result.status === 409 && result._id && byDocId.has(result._id)) conflicts.push(byDocId.get(result._id)!);
    else if (result.error) others.push(item);
  }
  return { conflicts, failures: bulkFailures(others) };
}

/** The record with its usage counts from the usage index added (the stored record keeps those of its writing). */
export function withUsage(record: MemoryRecord, usage: UsageDocument | undefined): MemoryRecord {
  if (!usage) return record;
  return {
    ...record,
    usage: {
      retrieved: record.usage.retrieved + usage.retrieved,
      adopted: record.usage.adopted + usage.adopted,
      lastUsedAt: usage.last_used_at === null ? record.usage.lastUsedAt : new Date(usage.last_used_at).toISOString(),
    },
  };
}

/** The one `_aliases` call that moves a tenant's alias to the reindexed index: both actions apply together or not at all. */
export function aliasSwapActions(alias: string, from: readonly string[], to: string) {
  return [...(from.length > 0 ? [{ remove: { indices: [...from], alias } }] : []), { add: { index: to, alias, is_write_index: true } }];
}

/** A stored vector as the port returns it; a zero vector was stored without the field. */
export function vectorOf(doc: Pick<MemoryDocument, 'vector'>, dimensions: number): Float32Array {
  return doc.vector ? Float32Array.from(doc.vector) : new Float32Array(dimensions);
}

/** The document's vector when it has one of `model` (a zero vector counts), else undefined (pending, or of another model). */
export function modelVectorOf(
  doc: Pick<MemoryDocument, 'vector' | 'vector_model'>,
  dimensions: number,
  model: string,
): Float32Array | undefined {
  return doc.vector_model === model ? vectorOf(doc, dimensions) : undefined;
}

/** Current documents waiting for their vector, oldest first. */
export function pendingQuery(size: number) {
  return {
    query: { bool: { filter: [CURRENT, { exists: { field: 'pending_since' } }] } },
    sort: [{ pending_since: 'asc' }, { seq: 'asc' }],
    size,
    _source: ['id', 'version', 'record.content.text'],
  };
}

/** Pending count and oldest, and the count of current documents whose vector is of another model (or of none recorded). */
export function embeddingLagQuery(model: string) {
  return {
    size: 0,
    query: CURRENT,
    aggs: {
      pending: { filter: { exists: { field: 'pending_since' } }, aggs: { oldest: { min: { field: 'pending_since' } } } },
      stale: {
        filter: {
          bool: { must_not: [{ exists: { field: 'pending_since' } }, { term: { vector_model: model } }] },
        },
      },
    },
  };
}

/**
 * The partial update of one version's document by `setVectors` (the caller
 * checked that the version is current): the vector and its model, and no
 * longer pending (a null field is a missing one to `exists`). No script:
 * nodes without the painless module take it too.
 */
export function setVectorOperations(docId: string, vector: Float32Array, model: string): object[] {
  return [{ update: { _id: docId, retry_on_conflict: 3 } }, { doc: { ...vectorFields(vector, model), pending_since: null } }];
}

/** Elasticsearch 8 or 9, from `GET /`; otherwise why not, without echoing anything but the version. */
export function checkServerVersion(info: { version?: { number?: string; distribution?: string } }): { major: number; minor: number } {
  const number = info.version?.number ?? '';
  const match = /^(\d+)\.(\d+)/.exec(number);
  if (info.version?.distribution || !match) throw new Error(`the server is not Elasticsearch (version ${JSON.stringify(number)})`);
  const major = Number(match[1]);
  if (major !== 8 && major !== 9) throw new Error(`Elasticsearch ${number} is not supported: ELMA needs Elasticsearch 8 or 9`);
  return { major, minor: Number(match[2]) };
}

/** Whether the server drops dense vectors from `_source` unless told not to (9.2 and later). */
export const dropsSourceVectors = (server: { major: number; minor: number }): boolean =>
  server.major > 9 || (server.major === 9 && server.minor >= 2);

/** The part of `GET {index}/_stats?level=shards` that tells whether deleted documents may still be retained. */
export interface ShardStats {
  indices?: Record<
    string,
    {
      shards?: Record<
        string,
        {
          routing?: { primary?: boolean };
          seq_no?: { max_seq_no?: number; global_checkpoint?: number };
          commit?: { user_data?: { max_seq_no?: string } };
          retention_leases?: { leases?: { retaining_seq_no: number }[] };
        }[]
      >;
    }
  >;
}

/** The highest sequence number of each primary shard (`index/shard`): every delete done so far is at or below it. */
export function maxSeqNos(stats: ShardStats): Map<string, number> {
  const marks = new Map<string, number>();
  for (const [index, { shards = {} } = {}] of Object.entries(stats.indices ?? {})) {
    for (const [shard, copies] of Object.entries(shards)) {
      const primary = copies.find((c) => c.routing?.primary);
      if (primary?.seq_no?.max_seq_no !== undefined) marks.set(`${index}/${shard}`, primary.seq_no.max_seq_no);
    }
  }
  return marks;
}

/**
 * Whether every shard copy's global checkpoint has reached the highest sequence number in its last commit. Only
 * then may a flush delete the older commits and translog generations (and the deleted documents' source they hold):
 * Elasticsearch keeps the newest "safe" commit, one whose operations are all below the global checkpoint it has
 * persisted, and every translog generation since that commit; a flush persists the global checkpoint it sees. A
 * flush made while a write was in flight makes a commit that is not safe yet, and until some later write or the
 * periodic checkpoint sync (30 s) the commit before it, and the translog from before the purge, stay on disk.
 * The translog's `uncommitted_operations` cannot tell: it counts from the safe commit, not from the last one.
 */
export function lastCommitsCovered(stats: ShardStats): boolean {
  for (const { shards = {} } of Object.values(stats.indices ?? {})) {
    for (const copies of Object.values(shards)) {
      for (const { commit, seq_no } of copies) {
        if ((seq_no?.global_checkpoint ?? -1) < Number(commit?.user_data?.max_seq_no ?? -1)) return false;
      }
    }
  }
  return true;
}

/**
 * Whether a merge may now drop the deleted documents up to `marks`: a
 * soft-deleted document stays in its segment, merges or not, while a
 * retention lease (shard copies' peer-recovery leases, CCR) still retains
 * its sequence number; the primary's own lease moves past a flush only at
 * the next lease sync (about 30 s). So every lease must retain only later
 * operations than the purge's.
 */
export function leasesPast(stats: ShardStats, marks: ReadonlyMap<string, number>): boolean {
  for (const [index, { shards = {} } = {}] of Object.entries(stats.indices ?? {})) {
    for (const [shard, copies] of Object.entries(shards)) {
      const mark = marks.get(`${index}/${shard}`);
      if (mark === undefined) continue;
      for (const copy of copies) {
        if ((copy.retention_leases?.leases ?? []).some((lease) => lease.retaining_seq_no <= mark)) return false;
      }
    }
  }
  return true;
}

/** The kind of writing of each hit that carries its text, by document id (`fuseByScript`). */
function scriptsOf(hits: readonly RouteHit[]): Map<string, ScriptGroup> {
  return new Map(hits.flatMap((h) => (h.text !== undefined ? [[h._id, scriptGroupOf(h.text)] as const] : [])));
}
