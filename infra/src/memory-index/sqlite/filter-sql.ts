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
import { lineageNeedle, purposeNeedle, scopeNeedle } from './schema';

export interface FilterSql {
  /** A boolean SQL expression over `m` (the memories table). */
  where: string;
  params: (string | number)[];
}

/**
 * Compiles the pushed-down policy filter to SQL over `memories m`. Returns
 * undefined when the filter can match nothing (an empty allow-list): default
 * deny, without asking the database.
 */
export function compileFilter(filter: IndexFilter): FilterSql | undefined {
  const clauses: string[] = [];
  const params: (string | number)[] = [];
  const inList = (column: string, values: readonly string[]) => {
    clauses.push(`${column} IN (${values.map(() => '?').join(', ')})`);
    params.push(...values);
  };

  if (filter.statuses.length === 0) return undefined;
  inList('m.status', filter.statuses);

  if (filter.kinds) {
    if (filter.kinds.length === 0) return undefined;
    inList('m.kind', filter.kinds);
  }

  clauses.push('m.sensitivity_rank <= ?');
  params.push(SENSITIVITY_RANK[filter.maxSensitivity]);

  if (filter.purposes) {
    if (filter.purposes.length === 0) return undefined;
    clauses.push(`(${filter.purposes.map(() => 'instr(m.purpose_set, ?) > 0').join(' OR ')})`);
    params.push(...filter.purposes.map(purposeNeedle));
  }

  if (filter.asOf !== undefined) {
    const asOf = millis(filter.asOf, 'asOf');
    clauses.push('m.valid_from <= ? AND (m.valid_to IS NULL OR m.valid_to > ?)');
    params.push(asOf, asOf);
  }

  // Transaction time: the version that was current then, or else the current version.
  if (filter.knownAsOf !== undefined) {
    const knownAsOf = millis(filter.knownAsOf, 'knownAsOf');
    clauses.push('m.tx_from <= ? AND (m.tx_to IS NULL OR m.tx_to > ?)');
    params.push(knownAsOf, knownAsOf);
  } else {
    clauses.push('m.tx_to IS NULL');
  }

  clauses.push('(m.expires_at IS NULL OR m.expires_at > ?)');
  params.push(millis(filter.now, 'now'));

  if (filter.scope) {
    const scope = compileScope(filter.scope);
    if (scope === undefined) return undefined;
    clauses.push(...scope.where);
    params.push(...scope.params);
  }

  if (filter.workingSession !== undefined) {
    clauses.push("(m.kind <> 'working' OR m.session = ?)");
    params.push(filter.workingSession);
  }

  if (filter.exclude) {
    const exclude = compileExclusions(filter.exclude);
    clauses.push(...exclude.where);
    params.push(...exclude.params);
  }

  if (filter.clauses) {
    if (filter.clauses.length === 0) return undefined;
    const reduced = reduceClauses(filter.clauses, filter);
    // A purpose every clause requires is checked once, outside the OR.
    const purposes = new Set(reduced.map((c) => c.purpose));
    const shared = purposes.size === 1 ? [...purposes][0] : undefined;
    if (shared !== undefined) {
      clauses.push('instr(m.purpose_set, ?) > 0');
      params.push(purposeNeedle(shared));
    }
    const policy = reduced.map((c) => compileClause(shared === undefined ? c : { ...c, purpose: undefined }, filter.maxSensitivity));
    if (!policy.some((c) => c.where === '')) {
      clauses.push(`(${policy.map((c) => `(${c.where})`).join(' OR ')})`);
      for (const c of policy) params.push(...c.params);
    }
  }

  return { where: clauses.join(' AND '), params };
}

/**
 * One allow clause: every attribute it names must hold (AND). An empty list
 * in it admits nothing, so it compiles to `0` rather than to `IN ()`, which
 * SQLite would accept with the same meaning but other engines reject.
 */
function compileClause(clause: ReadClause, globalMax: ReadClause['maxSensitivity']): FilterSql {
  const where: string[] = [];
  const params: (string | number)[] = [];
  const inList = (column: string, values: readonly string[] | undefined) => {
    if (!values) return;
    if (values.length === 0) {
      where.push('0');
      return;
    }
    where.push(`${column} IN (${values.map(() => '?').join(', ')})`);
    params.push(...values);
  };

  inList('m.kind', clause.kinds);
  inList('m.status', clause.statuses);
  inList('m.retention_class', clause.retentionClasses);
  // The global cap already holds; a clause repeats it only when it is stricter.
  if (SENSITIVITY_RANK[clause.maxSensitivity] < SENSITIVITY_RANK[globalMax]) {
    where.push('m.sensitivity_rank <= ?');
    params.push(SENSITIVITY_RANK[clause.maxSensitivity]);
  }
  // A record derived from another owner's records is theirs too: an owner-only clause never admits it.
  if (clause.owner !== undefined) {
    where.push('m.owner = ? AND instr(m.lineage_set, ?) = 0');
    params.push(clause.owner, lineageNeedle(SHARED_OWNERSHIP_KEY));
  }
  // A record without a project has project NULL, and NULL = ? is never true: it never matches a project clause.
  if (clause.project !== undefined) {
    where.push('m.project = ?');
    params.push(clause.project);
  }
  if (clause.purpose !== undefined) {
    where.push('instr(m.purpose_set, ?) > 0');
    params.push(purposeNeedle(clause.purpose));
  }
  return { where: where.join(' AND '), params };
}

/**
 * Exclusion lists (legal holds) can be long, so they are one JSON parameter
 * rather than one placeholder per value: the statement text, and so the
 * prepared-statement cache entry, does not change with the list's length.
 * A record is withheld when a held key names it or any of its ancestors
 * (`lineage_set`, see `restrictionKeys`).
 */
export function compileExclusions(exclude: ReadExclusions): { where: string[]; params: string[] } {
  const keys = exclusionKeys(exclude);
  if (keys.length === 0) return { where: [], params: [] };
  return {
    where: ['NOT EXISTS (SELECT 1 FROM json_each(?) h WHERE instr(m.lineage_set, h.value) > 0)'],
    params: [JSON.stringify(keys.map(lineageNeedle))],
  };
}

/**
 * The caller's scope (`IndexScope`): for each of its keys, one of its values
 * among the row's `scope_set` (see `scopeKeys`), and the valid-time range.
 * Undefined when it admits nothing (an empty list).
 */
export function compileScope(scope: IndexScope): { where: string[]; params: (string | number)[] } | undefined {
  const where: string[] = [];
  const params: (string | number)[] = [];
  for (const group of scopeGroups(scope)) {
    if (group.length === 0) return undefined;
    where.push(`(${group.map(() => 'instr(m.scope_set, ?) > 0').join(' OR ')})`);
    params.push(...group.map(scopeNeedle));
  }
  const { after, before } = occurredRange(scope);
  if (after !== undefined) {
    where.push('m.valid_from >= ?');
    params.push(after);
  }
  if (before !== undefined) {
    where.push('m.valid_from < ?');
    params.push(before);
  }
  return { where, params };
}

export function millis(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`${field} is not a valid ISO date-time`);
  return ms;
}
