import {
  ApplicationFailure,
  CancellationScope,
  condition,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Attempted, ErasureActivities } from '@elma/activities';
import type { ErasureProgress, ErasureStatus, ErasureStep, Verification } from '@elma/domain';
import { TENANT_ID_PATTERN } from '../reindex/messages';
import { ElmaStatus } from '../search-attributes';
import {
  ERASURE_FAILURES,
  ERASURE_REQUEST_ID_PATTERN,
  VERIFICATION_ROUNDS,
  approveErasureSignal,
  erasureProgressQuery,
  initialErasureProgress,
  type ErasureInput,
  type ErasureResult,
} from './messages';
import { ACTIVITY_RETRY, HEARTBEAT_TIMEOUT } from '../retry';

const activities = proxyActivities<ErasureActivities>({
  // A 1,000-record closure takes seconds; the timeout bounds a stuck attempt (a byte scan of a large data folder).
  // A dead worker is noticed by its missing heartbeats instead, within seconds.
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: ACTIVITY_RETRY,
});

/**
 * ErasureWorkflow (docs/architecture.md#erasure): authorize → locate → closure D*(m) →
 * legal-hold check → approval above the tenant's threshold → purge index →
 * purge caches → shred keys → delete streams → tombstones → verify → certify.
 * Each step is an idempotent activity; domain refusals (policy, validation)
 * are non-retryable and end the erasure visibly. A failed verification runs
 * the purge again, and after the last round fails with no certificate.
 * Inputs, results and progress are ids, counts and keyed hashes only.
 */
export async function erasureWorkflow(input: ErasureInput): Promise<ErasureResult> {
  const { tenant, requestId, reason } = input;
  if (!TENANT_ID_PATTERN.test(String(tenant)) || !ERASURE_REQUEST_ID_PATTERN.test(String(requestId))) {
    throw ApplicationFailure.create({ type: ERASURE_FAILURES.invalidInput, message: 'malformed tenant or request id', nonRetryable: true });
  }
  const progress: ErasureProgress = initialErasureProgress(requestId, tenant, reason);
  setHandler(erasureProgressQuery, () => progress);
  let approval: { approvedBy: string; at: string } | undefined;
  setHandler(approveErasureSignal, ({ approvedBy }) => {
    if (progress.status === 'awaiting_approval' && !approval && typeof approvedBy === 'string') {
      approval = { approvedBy, at: new Date().toISOString() };
    }
  });
  const setStatus = (status: ErasureStatus) => {
    progress.status = status;
    upsertSearchAttributes([{ key: ElmaStatus, value: status }]);
  };

  async function run<T>(step: ErasureStep, call: () => Promise<Attempted<T>>, counts?: (value: T) => Record<string, number>): Promise<T> {
    progress.currentStep = step;
    const startedAt = new Date().toISOString();
    const { value, attempt } = await call();
    progress.steps.push({
      step,
      startedAt,
      finishedAt: new Date().toISOString(),
      attempts: attempt,
      ...(counts ? { counts: counts(value) } : {}),
    });
    return value;
  }

  try {
    const settings = await run('authorize', () => activities.erasureAuthorize(tenant, requestId));
    const { seeds } = await run(
      'locate',
      () => activities.erasureLocate(tenant, requestId, settings.perRecord),
      (v) => ({ seeds: v.seeds.length }),
    );
    const closure = await run(
      'closure',
      () => activities.erasureClosure(tenant, requestId, seeds),
      (v) => ({ records: v.recordIds.length, events: v.eventIds.length }),
    );
    progress.closureSize = closure.recordIds.length;
    const checked = await run(
      'legal_hold',
      () => activities.erasureLegalHoldCheck(tenant, requestId, closure),
      (v) => ({ held: v.held.length }),
    );
    progress.blockedByLegalHold = checked.held.map((h) => h.recordId);
    const set = { recordIds: checked.recordIds, eventIds: checked.eventIds };

    const approvalStartedAt = new Date().toISOString();
    const required = set.recordIds.length > settings.approvalThreshold;
    if (required) {
      progress.currentStep = 'approval';
      progress.approvalDeadline = new Date(Date.now() + settings.approvalTimeoutMs).toISOString();
      setStatus('awaiting_approval');
      if (!(await condition(() => approval !== undefined, settings.approvalTimeoutMs))) {
        progress.failure = { code: ERASURE_FAILURES.approvalTimeout, message: 'no approval before the deadline' };
        setStatus('approval_timed_out');
        throw ApplicationFailure.create({
          type: ERASURE_FAILURES.approvalTimeout,
          message: 'the erasure was not approved in time',
          nonRetryable: true,
        });
      }
      progress.approvedBy = approval!.approvedBy;
      setStatus('running');
    }
    await run('approval', () =>
      activities.erasureRecordApproval(tenant, requestId, {
        required,
        startedAt: approvalStartedAt,
        ...(approval ? { approvedBy: approval.approvedBy } : {}),
      }),
    );

    let verification: Verification | undefined;
    let streamsDeleted = 0;
    let tombstones = 0;
    for (let round = 1; round <= VERIFICATION_ROUNDS; round++) {
      // Progress shows each step once: later rounds are purge retries of the same steps.
      const again = <T>(step: ErasureStep, call: () => Promise<Attempted<T>>, counts?: (value: T) => Record<string, number>) =>
        round === 1 ? run(step, call, counts) : call().then((r) => r.value);
      await again(
        'purge_index',
        () => activities.erasurePurgeIndex(tenant, requestId, set),
        (v) => v,
      );
      await again(
        'purge_caches',
        () => activities.erasurePurgeCaches(tenant, requestId, set),
        (v) => v,
      );
      await again(
        'shred_keys',
        () => activities.erasureShredKeys(tenant, requestId, set),
        (v) => v,
      );
      streamsDeleted += (
        await again(
          'delete_streams',
          () => activities.erasureDeleteStreams(tenant, requestId, set),
          (v) => v,
        )
      ).deleted;
      if (round === 1)
        tombstones = (
          await run(
            'tombstones',
            () => activities.erasureWriteTombstones(tenant, requestId, set),
            (v) => v,
          )
        ).tombstones;
      progress.currentStep = 'verify';
      const startedAt = new Date().toISOString();
      const { value, attempt } = await activities.erasureVerify(tenant, requestId, set, round);
      verification = value;
      if (verification.passed) {
        progress.steps.push({
          step: 'verify',
          startedAt,
          finishedAt: new Date().toISOString(),
          attempts: attempt,
          counts: { rounds: round },
        });
        break;
      }
    }
    if (!verification?.passed) {
      progress.failure = {
        code: ERASURE_FAILURES.verificationFailed,
        message: `verification failed after ${VERIFICATION_ROUNDS} purge rounds`,
      };
      setStatus('verification_failed');
      throw ApplicationFailure.create({ type: ERASURE_FAILURES.verificationFailed, message: progress.failure.message, nonRetryable: true });
    }

    const signed = await run('certify', () =>
      activities.erasureCertify(tenant, requestId, {
        set,
        held: checked.held,
        verification: verification!,
        approvedBy: approval?.approvedBy ?? null,
        approvedAt: approval?.at ?? null,
        streamsDeleted,
        tombstones,
      }),
    );
    progress.currentStep = null;
    progress.certificateAvailable = true;
    setStatus('completed');
    return {
      requestId,
      erased: set.recordIds.length,
      blockedByLegalHold: checked.held.length,
      keyId: signed.keyId,
      signature: signed.signature,
    };
  } catch (error) {
    if (progress.status === 'running' || progress.status === 'awaiting_approval') {
      const failure = error as { cause?: { type?: string; message?: string }; type?: string; message?: string };
      const code = failure.cause?.type ?? failure.type ?? 'ERASURE.FAILED';
      progress.failure = { code, message: failure.cause?.message ?? failure.message ?? 'failed' };
      setStatus(code === 'POLICY.DENIED' || code === 'AUTH.FORBIDDEN' ? 'denied' : 'failed');
    }
    // No certificate will come: the request's scope and workset (texts, vectors) must not outlive it under a live key.
    // Not cancellable, so a cancelled erasure shreds them too; if this fails for good, or the workflow is terminated,
    // the retention sweep shreds them once the tenant's retention window has passed.
    if (patched('erasure-abandon-shreds-workset')) {
      const code = progress.failure?.code ?? 'ERASURE.FAILED';
      await CancellationScope.nonCancellable(() => activities.erasureAbandon(tenant, requestId, code)).catch(() => undefined);
    }
    throw error;
  }
}
