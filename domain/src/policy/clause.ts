import { SENSITIVITY_RANK, type MemoryKind, type MemoryStatus, type RetentionClass, type Sensitivity } from '../memory/record';
import type { IndexFilter } from '../memory-index/port';

/**
 * One allow rule of a tenant policy, compiled for one caller and one purpose:
 * every field present must hold for a record (AND). A read filter is a list of
 * clauses, any of which admits a record (OR); an empty list admits nothing
 * (default deny). Subject and environment conditions are resolved at compile
 * time, so a clause only constrains record attributes and can be pushed into
 * an index query.
 */
export interface ReadClause {
  /** The policy rule this clause came from (the audit names it). */
  ruleId: string;
  kinds?: MemoryKind[];
  /** Highest sensitivity admitted (already capped by the caller's clearance). */
  maxSensitivity: Sensitivity;
  /** Record owner must equal this subject id. */
  owner?: string;
  /** Record project must equal this project. */
  project?: string;
  statuses?: MemoryStatus[];
  retentionClasses?: RetentionClass[];
  /** Record purposes must include this purpose (purpose limitation). Absent: the rule allows cross-purpose use. */
  purpose?: string;
}

/** Records withheld from a caller whatever the clauses say (legal holds, for callers without the `legal` role). */
export interface ReadExclusions {
  owners?: string[];
  projects?: string[];
  ids?: string[];
}

/**
 * The same admission with fewer predicates, for every index target: predicates the rest of the filter already
 * enforces are dropped from each clause (statuses, kinds, a sensitivity cap at
 * or above the global one), then clauses that admit a subset of another
 * clause are dropped (the OR admits them anyway). Which clause admits a record
 * may change; whether one does, never. The property tests in the index
 * contract hold this against the in-memory evaluation.
 */
export function reduceClauses(input: ReadClause[], filter: IndexFilter): ReadClause[] {
  const covers = (outer: readonly string[] | undefined, inner: readonly string[] | undefined) =>
    outer === undefined || (inner !== undefined && inner.every((v) => outer.includes(v)));
  const globalRank = SENSITIVITY_RANK[filter.maxSensitivity];
  const loosened = input.map((c) => ({
    ...c,
    statuses: covers(c.statuses, filter.statuses) ? undefined : c.statuses,
    kinds: covers(c.kinds, filter.kinds) ? undefined : c.kinds,
    maxSensitivity: SENSITIVITY_RANK[c.maxSensitivity] >= globalRank ? filter.maxSensitivity : c.maxSensitivity,
  }));
  // `wider` admits everything `narrower` admits.
  const subsumes = (wider: ReadClause, narrower: ReadClause) =>
    covers(wider.kinds, narrower.kinds) &&
    covers(wider.statuses, narrower.statuses) &&
    covers(wider.retentionClasses, narrower.retentionClasses) &&
    SENSITIVITY_RANK[wider.maxSensitivity] >= SENSITIVITY_RANK[narrower.maxSensitivity] &&
    (wider.owner === undefined || wider.owner === narrower.owner) &&
    (wider.project === undefined || wider.project === narrower.project) &&
    (wider.purpose === undefined || wider.purpose === narrower.purpose);
  return loosened.filter(
    (clause, i) => !loosened.some((other, j) => j !== i && subsumes(other, clause) && (!subsumes(clause, other) || j < i)),
  );
}
