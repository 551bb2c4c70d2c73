import type { FastifyRequest } from 'fastify';
import { ROLES, type Principal } from '@elma/domain';
import { isPlatformAdmin, type TenantQuotas } from '@elma/application';
import type { TenantAdmission } from './admission';
import type { BearerVerifier, Governance, Ingest, Memories, Recall } from './tokens';

/** The contents a write request carries: one per event of a batch, or the one event or memory. */
function contentsOf(body: unknown): unknown[] {
  if (body && typeof body === 'object') {
    const events = (body as { events?: unknown }).events;
    if (Array.isArray(events)) return events.map((e) => (e as { content?: unknown } | null)?.content);
    return [(body as { content?: unknown }).content];
  }
  return [undefined];
}

/**
 * Ingest behind the tenant's quotas: the event rate and the storage quotas
 * are checked before anything is sealed or appended; a batch that does not
 * fit is refused whole. REST and GraphQL share this service, so they share the limits.
 */
export function quotaIngest(ingest: Ingest, quotas: TenantQuotas): Ingest {
  return {
    async ingest(principal: Principal, body: unknown, requestId?: string) {
      const admitted = await quotas.admitWrite(principal.tenant, contentsOf(body), { rate: 'ingest' });
      try {
        return await ingest.ingest(principal, body, requestId);
      } catch (error) {
        admitted.release();
        throw error;
      }
    },
  };
}

/** Explicit memory writes count against the storage quotas (their rate is the API's general admission). */
export function quotaMemories(memories: Memories, quotas: TenantQuotas): Memories {
  return {
    get: (...args) => memories.get(...args),
    list: (...args) => memories.list(...args),
    versions: (...args) => memories.versions(...args),
    promote: (...args) => memories.promote(...args),
    async write(principal: Principal, body: unknown, requestId?: string) {
      const admitted = await quotas.admitWrite(principal.tenant, contentsOf(body), { rate: null });
      try {
        return await memories.write(principal, body, requestId);
      } catch (error) {
        admitted.release();
        throw error;
      }
    },
  };
}

/** Recall behind the tenant's recall rate; feedback is cheap and not counted. */
export function quotaRecall(recall: Recall, quotas: TenantQuotas): Recall {
  return {
    async recall(principal: Principal, body: unknown, requestId?: string) {
      await quotas.admitRecall(principal.tenant);
      return recall.recall(principal, body, requestId);
    },
    feedback: (...args) => recall.feedback(...args),
  };
}

/**
 * The admission gate's view of tenants: the tenant of a request is read from
 * its bearer token, verified (a claimed but unverified tenant would let
 * anyone spend another tenant's share), before the body is read.
 */
export function tenantAdmission(verifier: BearerVerifier, quotas: TenantQuotas): TenantAdmission {
  return {
    async tenantOf(request: FastifyRequest) {
      const header = request.headers.authorization;
      const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
      if (!match) return undefined;
      return (await verifier.verify(match[1])).tenant;
    },
    concurrencyLimit: async (tenant) => (await quotas.limits(tenant)).concurrentRequests,
    refuse: (tenant, limit) => quotas.refuseConcurrency(tenant, limit),
  };
}

/**
 * Policy changes behind the quota authority: a tenant admin may lower its
 * quotas or keep them, not raise them above the platform's defaults (that
 * would undo the protection quotas give the other tenants). Checked after
 * the role check, so a caller who may not change the policy at all still
 * gets AUTH.FORBIDDEN.
 */
export function quotaGovernance(governance: Governance, quotas: TenantQuotas): Governance {
  return {
    getPolicy: (...args) => governance.getPolicy(...args),
    placeHold: (...args) => governance.placeHold(...args),
    releaseHold: (...args) => governance.releaseHold(...args),
    listHolds: (...args) => governance.listHolds(...args),
    exportAudit: (...args) => governance.exportAudit(...args),
    verifyAudit: (...args) => governance.verifyAudit(...args),
    async putPolicy(principal: Principal, body: unknown, requestId: string, expectedVersion?: number) {
      if (principal.roles.includes(ROLES.administer) && !isPlatformAdmin(principal)) {
        await quotas.refuseRaise(principal.tenant, body);
      }
      return governance.putPolicy(principal, body, requestId, expectedVersion);
    },
  };
}
