import { Context } from '@temporalio/activity';
import type { CertifyOutcome, ErasureCertification, ErasureRequests, ErasureSteps, EraseSet, StepAttempt } from '@elma/application';
import type { ErasureStep, Verification } from '@elma/domain';
import { withDomainFailures } from '../shared/failures';

/** What the erasure activities call: the workflow's steps, its end, and the retention sweep's requests. */
export interface ErasureActivityDeps {
  steps: ErasureSteps;
  certification: ErasureCertification;
  requests: Pick<ErasureRequests, 'tenants' | 'countExpired' | 'requestRetention'>;
}

/**
 * The steps of `erasureWorkflow` and `retentionSweepWorkflow`. Thin on purpose: the work (and its
 * idempotency) is in `ErasureSteps` and `ErasureCertification`; this adds the attempt Temporal is on, for the certificate.
 * Arguments and results are ids, counts and keyed hashes: they are kept in workflow histories.
 */
export function createErasureActivities(deps: { erasure: ErasureActivityDeps }) {
  const { steps: e, certification: c, requests: r } = deps.erasure;
  return {
    erasureAuthorize: (tenant: string, requestId: string) => step((at) => e.authorize(tenant, requestId, at)),
    erasureLocate: (tenant: string, requestId: string, perRecord: boolean) => step((at) => e.locate(tenant, requestId, perRecord, at)),
    erasureClosure: (tenant: string, requestId: string, seeds: string[]) => step((at) => e.closure(tenant, requestId, seeds, at)),
    erasureLegalHoldCheck: (tenant: string, requestId: string, closure: EraseSet) =>
      step((at) => e.legalHoldCheck(tenant, requestId, closure, at)),
    erasureRecordApproval: (tenant: string, requestId: string, approval: { required: boolean; approvedBy?: string; startedAt: string }) =>
      step((at) => e.recordApproval(tenant, requestId, approval, at)),
    erasurePurgeIndex: (tenant: string, requestId: string, set: EraseSet) => step((at) => e.purgeIndex(tenant, requestId, set, at)),
    erasurePurgeCaches: (tenant: string, requestId: string, set: EraseSet) => step((at) => e.purgeCaches(tenant, requestId, set, at)),
    erasureShredKeys: (tenant: string, requestId: string, set: EraseSet) => step((at) => e.shredKeys(tenant, requestId, set, at)),
    erasureDeleteStreams: (tenant: string, requestId: string, set: EraseSet) => step((at) => e.deleteStreams(tenant, requestId, set, at)),
    erasureWriteTombstones: (tenant: string, requestId: string, set: EraseSet) =>
      step((at) => e.writeTombstones(tenant, requestId, set, at)),
    erasureVerify: (tenant: string, requestId: string, set: EraseSet, round: number): Promise<Attempted<Verification>> =>
      step((at) => e.verify(tenant, requestId, set, round, at)),
    erasureCertify: (tenant: string, requestId: string, outcome: CertifyOutcome) => step((at) => c.certify(tenant, requestId, outcome, at)),
    /** Shreds the scope and workset of a request that ends without a certificate; `outcome` is a failure code. */
    erasureAbandon: (tenant: string, requestId: string, outcome: string) => withDomainFailures(() => c.abandon(tenant, requestId, outcome)),
    /** Abandons the requests whose workset outlived the tenant's retention window. */
    erasureExpireWorksets: (asOf: string) => withDomainFailures(() => c.expireWorksets(asOf)),
    retentionTenants: () => withDomainFailures(() => r.tenants()),
    /** Opens the tenant's retention erasure for this run when it has expired records; false when there is nothing to do. */
    retentionOpen: (tenant: string, requestId: string, asOf: string) =>
      withDomainFailures(async () => {
        if ((await r.countExpired(tenant, asOf)) === 0) return false;
        await r.requestRetention(tenant, requestId, asOf);
        return true;
      }),
  };
}

export type ErasureActivities = ReturnType<typeof createErasureActivities>;

/** The erasure step each step activity runs, by activity type: what step metrics and traces are labelled with. */
export const ERASURE_STEP_OF_ACTIVITY = {
  erasureAuthorize: 'authorize',
  erasureLocate: 'locate',
  erasureClosure: 'closure',
  erasureLegalHoldCheck: 'legal_hold',
  erasureRecordApproval: 'approval',
  erasurePurgeIndex: 'purge_index',
  erasurePurgeCaches: 'purge_caches',
  erasureShredKeys: 'shred_keys',
  erasureDeleteStreams: 'delete_streams',
  erasureWriteTombstones: 'tombstones',
  erasureVerify: 'verify',
  erasureCertify: 'certify',
} as const satisfies Partial<Record<keyof ErasureActivities, ErasureStep>>;

/** A step's result with the attempt it succeeded on, which the workflow shows in its progress. */
export interface Attempted<T> {
  value: T;
  attempt: number;
}

async function step<T>(body: (at: StepAttempt) => Promise<T>): Promise<Attempted<T>> {
  const info = Context.current().info;
  const value = await withDomainFailures(() =>
    body({ attempt: info.attempt, startedAt: new Date(info.scheduledTimestampMs).toISOString() }),
  );
  return { value, attempt: info.attempt };
}
