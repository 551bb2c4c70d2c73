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

type EraseSet = Parameters<ErasureActivities['erasurePurgeIndex']>[2];
type ErasureSettings = Awaited<ReturnType<ErasureActivities['erasureAuthorize']>>['value'];
type LegalHoldChecked = Awaited<ReturnType<ErasureActivities['erasureLegalHoldCheck']>>['value'];
type StepCounts<T> = (value: T) => Record<string, number>;
type Approval = { approvedBy: string; at: string };

/** What every step of one erasure shares: its ids, and the progress its query shows. */
interface ErasureRun {
  tenant: string;
  requestId: string;
  progress: ErasureProgress;
}

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
  const approval = acceptApproval(progress);
  const erasure: ErasureRun = { tenant, requestId, progress };

  try {
    const settings = await runStep(progress, 'authorize', () => activities.erasureAuthorize(tenant, requestId));
    const checked = await locateErasable(erasure, settings.perRecord);
    const set = { recordIds: checked.recordIds, eventIds: checked.eventIds };
    await approveIfRequired(erasure, set, settings, approval);
    const { verification, streamsDeleted, tombstones } = await purgeUntilVerified(erasure, set);

    const signed = await runStep(progress, 'certify', () =>
      activities.erasureCertify(tenant, requestId, {
        set,
        held: checked.held,
        verification,
        approvedBy: approval()?.approvedBy ?? null,
        approvedAt: approval()?.at ?? null,
        streamsDeleted,
        tombstones,
      }),
    );
    progress.currentStep = null;
    progress.certificateAvailable = true;
    setStatus(progress, 'completed');
    return {
      requestId,
      erased: set.recordIds.length,
      blockedByLegalHold: checked.held.length,
      keyId: signed.keyId,
      signature: signed.signature,
    };
  } catch (error) {
    recordFailure(progress, error);
    await abandonWorkset(erasure);
    throw error;
  }
}

/** Takes the first approval that comes while the erasure awaits one; the returned function reads it. */
function acceptApproval(progress: ErasureProgress): () => Approval | undefined {
  let approval: Approval | undefined;
  setHandler(approveErasureSignal, ({ approvedBy }) => {
    if (progress.status === 'awaiting_approval' && !approval && typeof approvedBy === 'string') {
      approval = { approvedBy, at: new Date().toISOString() };
    }
  });
  return () => approval;
}

function setStatus(progress: ErasureProgress, status: ErasureStatus): void {
  progress.status = status;
  upsertSearchAttributes([{ key: ElmaStatus, value: status }]);
}

/** Runs one step's activity and adds the step, its attempts and its counts to the progress. */
async function runStep<T>(
  progress: ErasureProgress,
  step: ErasureStep,
  call: () => Promise<Attempted<T>>,
  counts?: StepCounts<T>,
): Promise<T> {
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

/** Locates the seeds, follows them to their closure D*(m), and sets aside the records a legal hold keeps. */
async function locateErasable({ tenant, requestId, progress }: ErasureRun, perRecord: boolean): Promise<LegalHoldChecked> {
  const { seeds } = await runStep(
    progress,
    'locate',
    () => activities.erasureLocate(tenant, requestId, perRecord),
    (v) => ({ seeds: v.seeds.length }),
  );
  const closure = await runStep(
    progress,
    'closure',
    () => activities.erasureClosure(tenant, requestId, seeds),
    (v) => ({ records: v.recordIds.length, events: v.eventIds.length }),
  );
  progress.closureSize = closure.recordIds.length;
  const checked = await runStep(
    progress,
    'legal_hold',
    () => activities.erasureLegalHoldCheck(tenant, requestId, closure),
    (v) => ({ held: v.held.length }),
  );
  progress.blockedByLegalHold = checked.held.map((h) => h.recordId);
  return checked;
}

/**
 * Above the tenant's threshold, waits for an approval until its deadline (and fails the erasure without one);
 * records the approval step either way.
 */
async function approveIfRequired(
  { tenant, requestId, progress }: ErasureRun,
  set: EraseSet,
  settings: ErasureSettings,
  approval: () => Approval | undefined,
): Promise<void> {
  const approvalStartedAt = new Date().toISOString();
  const required = set.recordIds.length > settings.approvalThreshold;
  if (required) {
    progress.currentStep = 'approval';
    progress.approvalDeadline = new Date(Date.now() + settings.approvalTimeoutMs).toISOString();
    setStatus(progress, 'awaiting_approval');
    if (!(await condition(() => approval() !== undefined, settings.approvalTimeoutMs))) {
      progress.failure = { code: ERASURE_FAILURES.approvalTimeout, message: 'no approval before the deadline' };
      setStatus(progress, 'approval_timed_out');
      throw ApplicationFailure.create({
        type: ERASURE_FAILURES.approvalTimeout,
        message: 'the erasure was not approved in time',
        nonRetryable: true,
      });
    }
    progress.approvedBy = approval()!.approvedBy;
    setStatus(progress, 'running');
  }
  await runStep(progress, 'approval', () => {
    const approved = approval();
    return activities.erasureRecordApproval(tenant, requestId, {
      required,
      startedAt: approvalStartedAt,
      ...(approved ? { approvedBy: approved.approvedBy } : {}),
    });
  });
}

/**
 * Purges the set (index, caches, keys, streams; tombstones once) and verifies it is gone, up to
 * VERIFICATION_ROUNDS times; when no round verifies, the erasure fails with no certificate.
 */
async function purgeUntilVerified(
  { tenant, requestId, progress }: ErasureRun,
  set: EraseSet,
): Promise<{ verification: Verification; streamsDeleted: number; tombstones: number }> {
  let verification: Verification | undefined;
  let streamsDeleted = 0;
  let tombstones = 0;
  for (let round = 1; round <= VERIFICATION_ROUNDS; round++) {
    // Progress shows each step once: later rounds are purge retries of the same steps.
    const again = <T>(step: ErasureStep, call: () => Promise<Attempted<T>>, counts?: StepCounts<T>) =>
      round === 1 ? runStep(progress, step, call, counts) : call().then((r) => r.value);
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
        await runStep(
          progress,
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
    setStatus(progress, 'verification_failed');
    throw ApplicationFailure.create({ type: ERASURE_FAILURES.verificationFailed, message: progress.failure.message, nonRetryable: true });
  }
  return { verification, streamsDeleted, tombstones };
}

/** Shows why the erasure ended; a status already set by the step that ended it (approval timeout, failed verification) stays. */
function recordFailure(progress: ErasureProgress, error: unknown): void {
  if (progress.status === 'running' || progress.status === 'awaiting_approval') {
    const failure = error as { cause?: { type?: string; message?: string }; type?: string; message?: string };
    const code = failure.cause?.type ?? failure.type ?? 'ERASURE.FAILED';
    progress.failure = { code, message: failure.cause?.message ?? failure.message ?? 'failed' };
    setStatus(progress, code === 'POLICY.DENIED' || code === 'AUTH.FORBIDDEN' ? 'denied' : 'failed');
  }
}

async function abandonWorkset({ tenant, requestId, progress }: ErasureRun): Promise<void> {
  // No certificate will come: the request's scope and workset (texts, vectors) must not outlive it under a live key.
  // Not cancellable, so a cancelled erasure shreds them too; if this fails for good, or the workflow is terminated,
  // the retention sweep shreds them once the tenant's retention window has passed.
  if (patched('erasure-abandon-shreds-workset')) {
    const code = progress.failure?.code ?? 'ERASURE.FAILED';
    await CancellationScope.nonCancellable(() => activities.erasureAbandon(tenant, requestId, code)).catch(() => undefined);
  }
}
