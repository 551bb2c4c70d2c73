import { DomainError, type AuditOperation, type Principal } from '@elma/domain';
import type { AuditLog } from '../audit/audit-log';

export class Forbidden extends DomainError {
  constructor(role: string) {
    super('AUTH.FORBIDDEN', `this operation needs the ${role} role`, { role });
  }
}

/**
 * The role check and audit entry of an administrative operation: a refusal is
 * audited (`deny`, rule `role:<role>`) before Forbidden is thrown; what is
 * allowed is recorded by the operation once it ran. No subject, no content.
 */
export class AuditedAccess {
  constructor(private readonly audit: AuditLog) {}

  /** Passes when the principal holds `role`, or one of the roles listed. */
  async require(
    principal: Principal,
    role: string | readonly string[],
    operation: AuditOperation,
    resourceIds: string[],
    requestId: string,
  ) {
    const roles = typeof role === 'string' ? [role] : role;
    if (principal.roles.some((held) => roles.includes(held))) return;
    const needed = roles.join('|');
    await this.record(principal, operation, resourceIds, requestId, 'deny', `role:${needed}`);
    throw new Forbidden(needed);
  }

  record(
    principal: Principal,
    operation: AuditOperation,
    resourceIds: string[],
    requestId: string,
    effect: 'allow' | 'deny',
    rule: string,
  ) {
    return this.audit.record({
      tenant: principal.tenant,
      actor: principal,
      subject: null,
      operation,
      resourceIds,
      decision: { effect, rule },
      requestId,
    });
  }
}
