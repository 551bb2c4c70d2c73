import { SENSITIVITY_RANK } from '../memory/record';
import {
  DEFAULT_DENY,
  type Condition,
  type Operation,
  type PolicyEnv,
  type PolicyResource,
  type PolicyRule,
  type PolicySubject,
} from './policy';

export interface PolicyDecision {
  allowed: boolean;
  /** The rule that allowed, or `default-deny`. */
  ruleId: string;
}

/** Only the rules matter to a decision; a whole TenantPolicy fits. */
export interface PolicyRules {
  rules: readonly PolicyRule[];
}

const DENY: PolicyDecision = { allowed: false, ruleId: DEFAULT_DENY };

/**
 * Decides one operation: the first rule that matches allows, and no match
 * denies. A read of a record above the subject's clearance is denied before
 * any rule is looked at, so no rule can widen a clearance. `resource` is null
 * for operations on no record (administer, a tenant-wide export): then only
 * rules without record conditions, and with `crossPurpose`, can match.
 */
export function evaluate(
  policy: PolicyRules,
  subject: PolicySubject,
  resource: PolicyResource | null,
  env: PolicyEnv,
  operation: Operation,
): PolicyDecision {
  if (operation === 'read' && resource && SENSITIVITY_RANK[resource.sensitivity] > SENSITIVITY_RANK[subject.clearance]) return DENY;
  const rule = policy.rules.find(
    (r) => r.operations.includes(operation) && subjectAndEnvHold(r.when, subject, env) && resourceHolds(r.when, subject, resource, env),
  );
  return rule ? { allowed: true, ruleId: rule.id } : DENY;
}

/** The conditions that do not depend on the record; compileRead resolves them once per call. */
export function subjectAndEnvHold(when: Condition, subject: PolicySubject, env: PolicyEnv): boolean {
  if (when.roles && !when.roles.some((role) => subject.roles.includes(role))) return false;
  if (when.purposes && !(env.purpose !== undefined && when.purposes.includes(env.purpose))) return false;
  if (when.channels && !(env.channel !== undefined && when.channels.includes(env.channel))) return false;
  return true;
}

function resourceHolds(when: Condition, subject: PolicySubject, resource: PolicyResource | null, env: PolicyEnv): boolean {
  if (!resource) {
    // Nothing to test record conditions against: they cannot be shown to hold.
    return (
      when.crossPurpose === true &&
      !when.kinds &&
      !when.maxSensitivity &&
      !when.ownerIsSubject &&
      !when.sameProject &&
      !when.statuses &&
      !when.retentionClasses
    );
  }
  if (when.kinds && !when.kinds.includes(resource.kind)) return false;
  if (when.maxSensitivity && SENSITIVITY_RANK[resource.sensitivity] > SENSITIVITY_RANK[when.maxSensitivity]) return false;
  if (when.ownerIsSubject && (resource.owner !== subject.user || resource.sharedOwnership === true)) return false;
  if (when.sameProject && (subject.project === undefined || resource.project !== subject.project)) return false;
  if (when.statuses && !when.statuses.includes(resource.status)) return false;
  if (when.retentionClasses && !when.retentionClasses.includes(resource.retentionClass)) return false;
  if (!when.crossPurpose && !(env.purpose !== undefined && resource.purposes.includes(env.purpose))) return false;
  return true;
}
