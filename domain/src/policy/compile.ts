import { exclusionKeys, isSharedOwnership, restrictionKeys } from '../memory/lineage';
import { SENSITIVITY_RANK, type MemoryRecord, type Sensitivity } from '../memory/record';
import type { ReadClause, ReadExclusions } from './clause';
import { subjectAndEnvHold, type PolicyRules } from './evaluate';
import type { PolicyEnv, PolicySubject } from './policy';

/**
 * The read rules of a policy, specialised to one subject and one call: rules
 * whose subject or environment conditions fail are dropped, and what remains
 * constrains record attributes only, so it can be pushed into an index query.
 * A record satisfies some clause exactly when `evaluate(..., 'read')` allows
 * it (the property test holds the two to that).
 */
export function compileRead(policy: PolicyRules, subject: PolicySubject, env: PolicyEnv): ReadClause[] {
  const clauses: ReadClause[] = [];
  for (const rule of policy.rules) {
    if (!rule.operations.includes('read') || !subjectAndEnvHold(rule.when, subject, env)) continue;
    const when = rule.when;
    // Rules that could only hold for a project or purpose the call does not have admit nothing.
    if (when.sameProject && subject.project === undefined) continue;
    if (!when.crossPurpose && env.purpose === undefined) continue;

    const clause: ReadClause = { ruleId: rule.id, maxSensitivity: lower(when.maxSensitivity ?? 'restricted', subject.clearance) };
    if (when.kinds) clause.kinds = [...when.kinds];
    if (when.ownerIsSubject) clause.owner = subject.user;
    if (when.sameProject) clause.project = subject.project;
    if (when.statuses) clause.statuses = [...when.statuses];
    if (when.retentionClasses) clause.retentionClasses = [...when.retentionClasses];
    if (!when.crossPurpose) clause.purpose = env.purpose;
    clauses.push(clause);
  }
  return clauses;
}

/** Whether the clauses admit the record (default deny for an empty list) and no exclusion withholds it. */
export function matchesClauses(record: MemoryRecord, clauses: readonly ReadClause[], exclude?: ReadExclusions): boolean {
  return !isExcluded(record, exclude) && admittingClause(record, clauses) !== undefined;
}

/** The first clause that admits the record, ignoring exclusions; its ruleId is what the audit names. */
export function admittingClause(record: MemoryRecord, clauses: readonly ReadClause[]): ReadClause | undefined {
  return clauses.find((clause) => clauseAdmits(record, clause));
}

/** Whether an exclusion (a legal hold) names the record or anything upstream of it. */
export function isExcluded(record: MemoryRecord, exclude: ReadExclusions | undefined): boolean {
  if (!exclude) return false;
  const withheld = new Set(exclusionKeys(exclude));
  return withheld.size > 0 && restrictionKeys(record).some((key) => withheld.has(key));
}

function clauseAdmits(record: MemoryRecord, clause: ReadClause): boolean {
  if (clause.kinds && !clause.kinds.includes(record.kind)) return false;
  if (SENSITIVITY_RANK[record.policy.sensitivity] > SENSITIVITY_RANK[clause.maxSensitivity]) return false;
  // A record derived from another owner's records belongs to them too: an owner-only rule cannot admit it.
  if (clause.owner !== undefined && (record.policy.owner !== clause.owner || isSharedOwnership(record))) return false;
  if (clause.project !== undefined && record.policy.project !== clause.project) return false;
  if (clause.statuses && !clause.statuses.includes(record.status)) return false;
  if (clause.retentionClasses && !clause.retentionClasses.includes(record.retention.class)) return false;
  if (clause.purpose !== undefined && !record.policy.purposes.includes(clause.purpose)) return false;
  return true;
}

function lower(a: Sensitivity, b: Sensitivity): Sensitivity {
  return SENSITIVITY_RANK[a] <= SENSITIVITY_RANK[b] ? a : b;
}
