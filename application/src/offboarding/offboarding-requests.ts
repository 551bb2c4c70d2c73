import {
  CreateOffboardRequest,
  OffboardBlockedByLegalHold,
  OffboardCertificateNotReady,
  OffboardExportNotConfigured,
  OffboardForbidden,
  OffboardNotAwaitingApproval,
  OffboardNotFound,
  OffboardPlatformTenant,
  OffboardSelfApproval,
  offboardStatus,
  OFFBOARD_REQUEST_ID,
  parseOrThrow,
  PLATFORM_TENANT,
  ROLES,
  SignedOffboardingCertificate,
  TENANT_ID_PATTERN,
  TenantAlreadyOffboarded,
  type Clock,
  type IdSource,
  type OffboardProgress,
  type OffboardState,
  type Principal,
} from '@elma/domain';
import type { AuditLog } from '../audit';
import type { LegalHolds } from '../governance/legal-holds';
import type { OffboardingStore } from './offboarding-store';
import type { TenantClosures } from './tenant-closures';

export interface OffboardingRequestDeps {
  store: OffboardingStore;
  closures: TenantClosures;
  holds: Pick<LegalHolds, 'list'>;
  audit: AuditLog;
  clock: Clock;
  ids: IdSource;
  /** Where exports go; absent: a request with `export: true` is refused. */
  exportDir?: string;
}

/** A platform admin: the `platform-admin` role in a token bound to the platform tenant, and nothing else. */
export function isPlatformAdmin(caller: Principal): boolean {
  return caller.tenant === PLATFORM_TENANT && caller.roles.includes(ROLES.platform);
}

/**
 * The API side of tenant off-boarding: a platform admin asks, another one
 * approves (four eyes), both read the progress and the certificate. Every
 * call writes an audit entry to the platform tenant's trail (ids only); a
 * refused caller's entry goes to their own tenant's trail. A tenant that
 * does not exist is answered exactly like one that does: its off-boarding
 * runs, finds nothing, and tombstones the name.
 */
export class OffboardingRequests {
  constructor(private readonly deps: OffboardingRequestDeps) {}

  async request(caller: Principal, tenant: string, body: unknown, httpRequestId: string): Promise<OffboardState & { requestId: string }> {
    await this.authorize(caller, tenant, 'offboard:request', httpRequestId);
    const parsed = parseOrThrow(CreateOffboardRequest, body);
    await this.assertOffboardable(tenant);
    if (parsed.export && !this.deps.exportDir) throw new OffboardExportNotConfigured();
    const requestId = `off_${this.deps.ids.next()}`;
    const requestedAt = this.deps.clock.now().toISOString();
    await this.deps.store.append(
      tenant,
      requestId,
      [
        {
          type: 'OffboardingRequested',
          requestId,
          tenant,
          reason: parsed.reason,
          export: parsed.export,
          requestedBy: caller.sub,
          requestedAt,
        },
      ],
      -1n,
    );
    await this.auditPlatform(caller, tenant, requestId, 'administer', 'allow', 'offboard:request', httpRequestId);
    return { ...(await this.deps.store.read(tenant, requestId)).state, requestId };
  }

  /**
   * Records a second platform admin's approval; returns true when the workflow is to be started (also on a
   * repeated approval by the same approver, so a start lost to an outage is made again).
   */
  async approve(caller: Principal, tenant: string, requestId: string, httpRequestId: string): Promise<OffboardState> {
    await this.authorize(caller, tenant, 'offboard:approve', httpRequestId, requestId);
    const { state, revision } = await this.readOwn(tenant, requestId);
    const request = state.request!;
    if (request.requestedBy === caller.sub) {
      await this.auditPlatform(caller, tenant, requestId, 'administer', 'deny', 'offboard:four-eyes', httpRequestId);
      throw new OffboardSelfApproval();
    }
    if (state.approval) {
      if (state.approval.approvedBy === caller.sub && !state.failure && state.certified === undefined) return state;
      throw new OffboardNotAwaitingApproval(requestId);
    }
    if (state.failure) throw new OffboardNotAwaitingApproval(requestId);
    await this.assertOffboardable(tenant);
    const approvedAt = this.deps.clock.now().toISOString();
    // With the revision read: of two approvals at once, one is stored.
    await this.deps.store.append(tenant, requestId, [{ type: 'OffboardingApproved', approvedBy: caller.sub, approvedAt }], revision);
    await this.auditPlatform(caller, tenant, requestId, 'administer', 'allow', 'offboard:approve', httpRequestId);
    return (await this.deps.store.read(tenant, requestId)).state;
  }

  /** The stored state of a request of this tenant (OFFBOARD.NOT_FOUND otherwise, whether or not the tenant exists). */
  async follow(caller: Principal, tenant: string, requestId: string, httpRequestId: string): Promise<OffboardState> {
    await this.authorize(caller, tenant, 'offboard:read', httpRequestId, requestId);
    return (await this.readOwn(tenant, requestId)).state;
  }

  async certificate(caller: Principal, tenant: string, requestId: string, httpRequestId: string): Promise<SignedOffboardingCertificate> {
    const state = await this.follow(caller, tenant, requestId, httpRequestId);
    if (state.certified === undefined) throw new OffboardCertificateNotReady(requestId);
    await this.auditPlatform(caller, tenant, requestId, 'export', 'allow', 'offboard:certificate', httpRequestId);
    return SignedOffboardingCertificate.parse(state.certified);
  }

  private async readOwn(tenant: string, requestId: string) {
    if (!TENANT_ID_PATTERN.test(tenant) || !OFFBOARD_REQUEST_ID.test(requestId)) throw new OffboardNotFound(requestId.slice(0, 80));
    const folded = await this.deps.store.read(tenant, requestId);
    if (!folded.state.request || folded.state.request.tenant !== tenant) throw new OffboardNotFound(requestId);
    return folded;
  }

  /** The platform tenant, a tenant with active holds and a tenant already closed cannot be off-boarded (again). */
  private async assertOffboardable(tenant: string): Promise<void> {
    if (tenant === PLATFORM_TENANT) throw new OffboardPlatformTenant();
    const closure = await this.deps.closures.closure(tenant, { fresh: true });
    if (closure === 'offboarded') throw new TenantAlreadyOffboarded();
    if (closure === 'sealed') {
      // Sealed by an off-boarding still under way: refused. Sealed by one that failed after destroying the key
      // (the tenant stays closed): a new off-boarding may finish the job and certify it.
      const sealedBy = this.deps.closures.closedBy(tenant);
      const previous = sealedBy ? (await this.deps.store.read(tenant, sealedBy)).state : undefined;
      if (!previous?.failure) throw new TenantAlreadyOffboarded();
    }
    const holds = await this.deps.holds.list(tenant, { fresh: true });
    if (holds.length > 0) throw new OffboardBlockedByLegalHold(holds.length);
  }

  /** Before anything else, so any other caller gets the same 403 whatever the tenant in the path. */
  private async authorize(caller: Principal, tenant: string, rule: string, httpRequestId: string, requestId?: string): Promise<void> {
    if (isPlatformAdmin(caller)) {
      if (!TENANT_ID_PATTERN.test(tenant)) throw new OffboardNotFound(requestId?.slice(0, 80));
      return;
    }
    await this.deps.audit.record({
      tenant: caller.tenant,
      actor: caller,
      subject: null,
      operation: 'administer',
      // The path's tenant is the caller's own input; bounded by the id pattern, or not named.
      resourceIds: TENANT_ID_PATTERN.test(tenant) ? [`tenant:${tenant}`] : [],
      decision: { effect: 'deny', rule: `${rule}:role:${ROLES.platform}` },
      requestId: httpRequestId,
    });
    throw new OffboardForbidden();
  }

  private async auditPlatform(
    caller: Principal,
    tenant: string,
    requestId: string,
    operation: 'administer' | 'export',
    effect: 'allow' | 'deny',
    rule: string,
    httpRequestId: string,
  ): Promise<void> {
    await this.deps.audit.record({
      tenant: PLATFORM_TENANT,
      actor: caller,
      subject: null,
      operation,
      resourceIds: [`tenant:${tenant}`, requestId],
      decision: { effect, rule },
      requestId: httpRequestId,
    });
  }
}

/** Progress as the stream tells it (the workflow's query adds the current step while it runs). */
export function offboardProgress(
  requestId: string,
  state: OffboardState,
  currentStep: OffboardProgress['currentStep'] = null,
): OffboardProgress {
  const request = state.request!;
  return {
    requestId,
    tenant: request.tenant,
    reason: request.reason,
    export: request.export,
    status: offboardStatus(state),
    requestedBy: request.requestedBy,
    requestedAt: request.requestedAt,
    approvedBy: state.approval?.approvedBy ?? null,
    currentStep: state.certified !== undefined || state.failure ? null : currentStep,
    steps: [...state.steps.values()].map((s) => ({ step: s.step, finishedAt: s.finishedAt, attempts: s.attempts, counts: s.counts })),
    failure: state.failure ? { code: state.failure.code } : null,
    certificateAvailable: state.certified !== undefined,
  };
}
