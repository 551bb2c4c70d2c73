import type { MemoryKind, MemoryStatus, RetentionClass, Sensitivity } from '../memory/record';

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
