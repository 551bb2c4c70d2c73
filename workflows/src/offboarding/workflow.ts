import { ApplicationFailure, CancellationScope, proxyActivities, sleep } from '@temporalio/workflow';
import type { OffboardingActivities } from '@elma/activities';
import { TENANT_ID_PATTERN } from '../reindex/messages';
import { ACTIVITY_RETRY, HEARTBEAT_TIMEOUT } from '../retry';
import {
  OFFBOARD_FAILURES,
  OFFBOARD_REQUEST_ID_PATTERN,
  OFFBOARD_VERIFICATION_ROUNDS,
  SEAL_SETTLE,
  type OffboardInput,
  type OffboardResult,
} from './messages';

const activities = proxyActivities<OffboardingActivities>({
  // An export or a byte scan of a large data folder takes minutes; a dead worker is noticed by its heartbeats.
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: ACTIVITY_RETRY,
});

/**
 * OffboardWorkflow (docs/architecture.md#tenant-off-boarding): seal → legal-hold check → export (optional) →
 * destroy the tenant key → drop the index → delete the streams → verify → certify. Started once a second
 * platform admin approved. Each step is an idempotent activity that records itself in the off-boarding
 * stream, so a worker killed mid-way resumes where it stopped. Inputs and results are ids and counts.
 */
export async function offboardWorkflow(input: OffboardInput): Promise<OffboardResult> {
  const { tenant, requestId } = input;
  if (!TENANT_ID_PATTERN.test(String(tenant)) || !OFFBOARD_REQUEST_ID_PATTERN.test(String(requestId))) {
    throw ApplicationFailure.create({
      type: OFFBOARD_FAILURES.invalidInput,
      message: 'malformed tenant or request id',
      nonRetryable: true,
    });
  }
  try {
    await activities.offboardSeal(tenant, requestId);
    await sleep(SEAL_SETTLE);
    await activities.offboardLegalHoldCheck(tenant, requestId);
    await activities.offboardExport(tenant, requestId);
    await activities.offboardDestroyKey(tenant, requestId);
    let rounds = 0;
    let verification: Awaited<ReturnType<OffboardingActivities['offboardVerify']>> | undefined;
    for (rounds = 1; rounds <= OFFBOARD_VERIFICATION_ROUNDS; rounds++) {
      await activities.offboardDropIndex(tenant, requestId);
      await activities.offboardDeleteStreams(tenant, requestId);
      verification = await activities.offboardVerify(tenant, requestId, rounds);
      if (verification.passed) break;
    }
    if (!verification?.passed) {
      throw ApplicationFailure.create({
        type: OFFBOARD_FAILURES.verificationFailed,
        message: `verification failed after ${OFFBOARD_VERIFICATION_ROUNDS} rounds`,
        nonRetryable: true,
      });
    }
    const signed = await activities.offboardCertify(tenant, requestId, { verification, rounds });
    return { requestId, ...signed };
  } catch (error) {
    const failure = error as { cause?: { type?: string }; type?: string };
    const code = failure.cause?.type ?? failure.type ?? 'OFFBOARD.FAILED';
    await CancellationScope.nonCancellable(() => activities.offboardFail(tenant, requestId, code)).catch(() => undefined);
    throw error;
  }
}
