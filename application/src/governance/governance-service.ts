import { ROLES, type AuditEntry, type LegalHold, type Principal, type TenantPolicy } from '@elma/domain';
import type { AuditLog } from '../audit/audit-log';
import type { LegalHolds } from './legal-holds';
import type { PolicyStore } from './policy-store';
import { AuditedAccess } from './audited-access';

export { Forbidden } from './audited-access';

/** Who may run the governance operations themselves. */
const ROLE = { administer: ROLES.administer, legal: ROLES.legal, audit: ROLES.audit } as const;

/**
 * Policy changes, legal holds and the audit trail itself. Each operation
 * checks the caller's role, runs, and is audited, refusals included.
 */
export class GovernanceService {
  private readonly access: AuditedAccess;

  constructor(private readonly deps: { policies: PolicyStore; holds: LegalHolds; audit: AuditLog }) {
    this.access = new AuditedAccess(deps.audit);
  }

  async getPolicy(principal: Principal, requestId: string): Promise<TenantPolicy> {
    await this.access.require(principal, ROLE.administer, 'administer', ['policy'], requestId);
    const policy = await this.deps.policies.get(principal.tenant);
    await this.access.record(principal, 'administer', [`policy/v${policy.version}`], requestId, 'allow', 'role:admin');
    return policy;
  }

  async putPolicy(principal: Principal, body: unknown, requestId: string, expectedVersion?: number): Promise<TenantPolicy> {
    await this.access.require(principal, ROLE.administer, 'administer', ['policy'], requestId);
    const policy = await this.deps.policies.put(principal.tenant, body, principal.sub, expectedVersion);
    await this.access.record(principal, 'administer', [`policy/v${policy.version}`], requestId, 'allow', 'role:admin');
    return policy;
  }

  async placeHold(principal: Principal, body: unknown, requestId: string): Promise<LegalHold> {
    await this.access.require(principal, ROLE.legal, 'administer', ['legal-hold'], requestId);
    const hold = await this.deps.holds.place(principal.tenant, principal.sub, body);
    await this.access.record(principal, 'administer', [hold.id, ...(hold.scope.recordIds ?? [])], requestId, 'allow', 'role:legal');
    return hold;
  }

  async releaseHold(principal: Principal, id: string, requestId: string): Promise<void> {
    await this.access.require(principal, ROLE.legal, 'administer', [id], requestId);
    await this.deps.holds.release(principal.tenant, principal.sub, id);
    await this.access.record(principal, 'administer', [id], requestId, 'allow', 'role:legal');
  }

  async listHolds(principal: Principal, requestId: string): Promise<LegalHold[]> {
    await this.access.require(principal, ROLE.legal, 'read', ['legal-hold'], requestId);
    return this.deps.holds.list(principal.tenant);
  }

  /** The audit trail as entries; the export itself is audited before the first entry is read. */
  async exportAudit(
    principal: Principal,
    filter: Parameters<AuditLog['export']>[1],
    requestId: string,
  ): Promise<AsyncIterable<AuditEntry>> {
    await this.access.require(principal, ROLE.audit, 'export', ['audit'], requestId);
    await this.access.record(principal, 'export', ['audit'], requestId, 'allow', 'role:auditor');
    return this.deps.audit.export(principal.tenant, filter);
  }

  async verifyAudit(principal: Principal, requestId: string) {
    await this.access.require(principal, ROLE.audit, 'export', ['audit'], requestId);
    const result = await this.deps.audit.verify(principal.tenant);
    await this.access.record(principal, 'export', ['audit/verify'], requestId, 'allow', 'role:auditor');
    return result;
  }
}
