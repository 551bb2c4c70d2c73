import { Context } from '@temporalio/activity';
import type { OffboardAttempt, OffboardingSteps, OffboardVerification } from '@elma/application';
import { withDomainFailures } from '../shared/failures';

/**
 * The steps of `offboardWorkflow`. Thin on purpose: the work and its idempotency are in `OffboardingSteps`;
 * this adds the attempt Temporal is on. Arguments and results are ids and counts only.
 */
export function createOffboardingActivities(deps: { offboarding: OffboardingSteps }) {
  const s = deps.offboarding;
  return {
    offboardSeal: (tenant: string, requestId: string) => attempt((at) => s.seal(tenant, requestId, at)),
    offboardLegalHoldCheck: (tenant: string, requestId: string) => attempt((at) => s.legalHoldCheck(tenant, requestId, at)),
    offboardExport: (tenant: string, requestId: string) => attempt((at) => s.export(tenant, requestId, at)),
    offboardDestroyKey: (tenant: string, requestId: string) => attempt((at) => s.destroyKey(tenant, requestId, at)),
    offboardDropIndex: (tenant: string, requestId: string) => attempt((at) => s.dropIndex(tenant, requestId, at)),
    offboardDeleteStreams: (tenant: string, requestId: string) => attempt((at) => s.deleteStreams(tenant, requestId, at)),
    offboardVerify: (tenant: string, requestId: string, round: number): Promise<OffboardVerification> =>
      attempt((at) => s.verify(tenant, requestId, round, at)),
    offboardCertify: (tenant: string, requestId: string, outcome: { verification: OffboardVerification; rounds: number }) =>
      withDomainFailures(async () => {
        const signed = await s.certify(tenant, requestId, outcome);
        // The history keeps the signature, not the certificate (it is in the off-boarding stream).
        return { keyId: signed.signature.kid, signature: signed.signature.value };
      }),
    /** Ends an off-boarding without a certificate; `code` is a failure code. */
    offboardFail: (tenant: string, requestId: string, code: string) => withDomainFailures(() => s.fail(tenant, requestId, code)),
  };
}

export type OffboardingActivities = ReturnType<typeof createOffboardingActivities>;

function attempt<T>(body: (at: OffboardAttempt) => Promise<T>): Promise<T> {
  const info = Context.current().info;
  return withDomainFailures(() => body({ attempt: info.attempt, startedAt: new Date(info.scheduledTimestampMs).toISOString() }));
}
