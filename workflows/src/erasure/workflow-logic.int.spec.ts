import { Context } from '@temporalio/activity';
import { ActivityFailure, ApplicationFailure, CancelledFailure, WorkflowFailedError, type Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import type { Attempted, ErasureActivities } from '@elma/activities';
import { ERASURE_STEPS, type ErasureProgress, type Verification } from '@elma/domain';
import { suiteWorkflowEnv, argsOf, names, eventually, recording } from '../../../tests/support/workflow-env';
import { ERASURE_FAILURES, VERIFICATION_ROUNDS, approveErasureSignal, erasureProgressQuery, type ErasureInput } from './messages';
import type { erasureWorkflow } from './workflow';

/** The step's value with the attempt Temporal is on, as the real activities report it. */
const attempted = <T>(value: T): Attempted<T> => ({ value, attempt: Context.current().info.attempt });

const probe = (failed = 0) => ({ checked: 3, failed, skipped: 0 });
const verification = (passed: boolean, round: number): Verification => ({
  passed,
  getById: probe(passed ? 0 : 1),
  bm25: probe(),
  knn: probe(),
  decrypt: probe(),
  byteScan: { ...probe(), files: 2, bytes: 4096, paths: ['log/events.db'] },
  rounds: round,
});

const CLOSURE = { recordIds: ['r1', 'r2', 'r3', 'r4'], eventIds: ['e1', 'e2'] };

/** Stubs of every erasure activity: a four-record closure, nothing held, no approval needed, verification passes. */
function stubs(overrides: Partial<ErasureActivities> = {}): ErasureActivities {
  return {
    erasureAuthorize: async () => attempted({ perRecord: false, approvalThreshold: 10, approvalTimeoutMs: 60_000 }),
    erasureLocate: async () => attempted({ seeds: ['r1'] }),
    erasureClosure: async () => attempted(CLOSURE),
    erasureLegalHoldCheck: async (_tenant, _requestId, closure) => attempted({ ...closure, held: [] }),
    erasureRecordApproval: async () => attempted(undefined),
    erasurePurgeIndex: async (_tenant, _requestId, set) => attempted({ purged: set.recordIds.length }),
    erasurePurgeCaches: async () => attempted({ evicted: 1 }),
    erasureShredKeys: async (_tenant, _requestId, set) => attempted({ shredded: set.recordIds.length }),
    erasureDeleteStreams: async () => attempted({ deleted: 2, shreddedInPlace: 0 }),
    erasureWriteTombstones: async (_tenant, _requestId, set) => attempted({ tombstones: set.recordIds.length }),
    erasureVerify: async (_tenant, _requestId, _set, round) => attempted(verification(true, round)),
    erasureCertify: async () => attempted({ keyId: 'key-1', signature: 'sig-1' }),
    erasureAbandon: async () => ({ shredded: true }),
    erasureExpireWorksets: async () => ({ expired: 0 }),
    retentionTenants: async () => [],
    retentionOpen: async () => false,
    ...overrides,
  };
}

const denied = (type: string) => ApplicationFailure.create({ type, message: 'refused', nonRetryable: true });

const input = (requestId = `era_${Math.random().toString(36).slice(2)}`): ErasureInput => ({
  tenant: 'acme',
  requestId,
  reason: 'subject_request',
});

/** The failure type a workflow ended with, whether it threw itself or an activity's failure ended it. */
async function failureType(result: Promise<unknown>): Promise<string | undefined> {
  const error = await result.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  let cause = (error as WorkflowFailedError).cause;
  if (cause instanceof ActivityFailure) cause = cause.cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return (cause as ApplicationFailure).type ?? undefined;
}

const start = (client: Client, taskQueue: string, args: ErasureInput) =>
  client.workflow.start<typeof erasureWorkflow>('erasureWorkflow', {
    taskQueue,
    workflowId: `erasure-${args.tenant}-${args.requestId}`,
    args: [args],
  });

describe('erasureWorkflow, with its activities stubbed', () => {
  const env = suiteWorkflowEnv();

  it('runs every step once, in order, and certifies what it erased', async () => {
    const { activities, calls } = recording(stubs());
    const { result, progress } = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      return { result: await handle.result(), progress: await handle.query(erasureProgressQuery) };
    });

    expect(names(calls)).toEqual([
      'erasureAuthorize',
      'erasureLocate',
      'erasureClosure',
      'erasureLegalHoldCheck',
      'erasureRecordApproval',
      'erasurePurgeIndex',
      'erasurePurgeCaches',
      'erasureShredKeys',
      'erasureDeleteStreams',
      'erasureWriteTombstones',
      'erasureVerify',
      'erasureCertify',
    ]);
    expect(result).toEqual({
      requestId: expect.stringMatching(/^era_/),
      erased: 4,
      blockedByLegalHold: 0,
      keyId: 'key-1',
      signature: 'sig-1',
    });
    expect(argsOf(calls, 'erasureRecordApproval')[0][2]).toEqual({ required: false, startedAt: expect.any(String) });
    expect(argsOf(calls, 'erasureCertify')[0][2]).toMatchObject({
      set: CLOSURE,
      held: [],
      approvedBy: null,
      approvedAt: null,
      streamsDeleted: 2,
      tombstones: 4,
    });
    expect(progress).toMatchObject<Partial<ErasureProgress>>({
      status: 'completed',
      currentStep: null,
      closureSize: 4,
      certificateAvailable: true,
    });
    expect(progress.steps.map((s) => s.step)).toEqual([...ERASURE_STEPS]);
    expect(progress.steps.every((s) => s.attempts === 1)).toBe(true);
  });

  it('leaves records under legal hold out of every purge step and counts them as blocked, not erased', async () => {
    const { activities, calls } = recording(
      stubs({
        // Four records, one held: three to erase, below an approval threshold of three.
        erasureAuthorize: async () => attempted({ perRecord: false, approvalThreshold: 3, approvalTimeoutMs: 60_000 }),
        erasureLegalHoldCheck: async () =>
          attempted({ recordIds: ['r1', 'r3', 'r4'], eventIds: ['e1'], held: [{ recordId: 'r2', holdIds: ['hold-9'] }] }),
      }),
    );
    const { result, progress } = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      return { result: await handle.result(), progress: await handle.query(erasureProgressQuery) };
    });

    const erasable = { recordIds: ['r1', 'r3', 'r4'], eventIds: ['e1'] };
    for (const step of [
      'erasurePurgeIndex',
      'erasurePurgeCaches',
      'erasureShredKeys',
      'erasureDeleteStreams',
      'erasureWriteTombstones',
      'erasureVerify',
    ]) {
      expect(argsOf(calls, step)[0][2], step).toEqual(erasable);
    }
    expect(argsOf(calls, 'erasureCertify')[0][2]).toMatchObject({ set: erasable, held: [{ recordId: 'r2', holdIds: ['hold-9'] }] });
    expect(result).toMatchObject({ erased: 3, blockedByLegalHold: 1 });
    expect(progress).toMatchObject({ closureSize: 4, blockedByLegalHold: ['r2'], status: 'completed' });
    // The approval threshold applies to what will be erased, not to the closure.
    expect(argsOf(calls, 'erasureRecordApproval')[0][2]).toMatchObject({ required: false });
  });

  it('purges again after a failed verification and certifies the round that passed, showing each step once', async () => {
    const { activities, calls } = recording(
      stubs({ erasureVerify: async (_t, _r, _s, round) => attempted(verification(round === 3, round)) }),
    );
    const { result, progress } = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      return { result: await handle.result(), progress: await handle.query(erasureProgressQuery) };
    });

    expect(argsOf(calls, 'erasureVerify').map((args) => args[3])).toEqual([1, 2, 3]);
    expect(argsOf(calls, 'erasurePurgeIndex')).toHaveLength(3);
    expect(argsOf(calls, 'erasureShredKeys')).toHaveLength(3);
    // Tombstones are written once; the streams deleted add up over the rounds.
    expect(argsOf(calls, 'erasureWriteTombstones')).toHaveLength(1);
    expect(argsOf(calls, 'erasureCertify')[0][2]).toMatchObject({ verification: { passed: true, rounds: 3 }, streamsDeleted: 6 });
    expect(result.signature).toBe('sig-1');
    expect(progress.steps.map((s) => s.step)).toEqual([...ERASURE_STEPS]);
    expect(progress.steps.find((s) => s.step === 'verify')?.counts).toEqual({ rounds: 3 });
  });

  it(`fails with no certificate when verification fails ${VERIFICATION_ROUNDS} rounds running, and shreds its workset`, async () => {
    const { activities, calls } = recording(stubs({ erasureVerify: async (_t, _r, _s, round) => attempted(verification(false, round)) }));
    const { type, progress } = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      return { type: await failureType(handle.result()), progress: await handle.query(erasureProgressQuery) };
    });

    expect(type).toBe(ERASURE_FAILURES.verificationFailed);
    expect(argsOf(calls, 'erasureVerify')).toHaveLength(VERIFICATION_ROUNDS);
    expect(argsOf(calls, 'erasurePurgeIndex')).toHaveLength(VERIFICATION_ROUNDS);
    expect(names(calls)).not.toContain('erasureCertify');
    expect(names(calls).at(-1)).toBe('erasureAbandon');
    expect(argsOf(calls, 'erasureAbandon')[0][2]).toBe(ERASURE_FAILURES.verificationFailed);
    expect(progress).toMatchObject({
      status: 'verification_failed',
      certificateAvailable: false,
      failure: { code: ERASURE_FAILURES.verificationFailed },
    });
  });

  it('ends with its own failure when shredding the workset of a failed erasure fails too', async () => {
    const { activities, calls } = recording(
      stubs({
        erasureVerify: async (_t, _r, _s, round) => attempted(verification(false, round)),
        erasureAbandon: async () => {
          throw denied('ERASURE.NOT_FOUND');
        },
      }),
    );
    const type = await env.withWorker(activities, async (client, taskQueue) =>
      failureType((await start(client, taskQueue, input())).result()),
    );

    expect(type).toBe(ERASURE_FAILURES.verificationFailed);
    expect(argsOf(calls, 'erasureAbandon')).toHaveLength(1);
  });

  it('waits for a DPO approval above the threshold, purges nothing before it, and certifies who approved', async () => {
    const { activities, calls } = recording(
      stubs({ erasureAuthorize: async () => attempted({ perRecord: false, approvalThreshold: 2, approvalTimeoutMs: 60_000 }) }),
    );
    const { waiting, purgedWhileWaiting, result, progress } = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      await eventually(async () => (await handle.query(erasureProgressQuery)).status === 'awaiting_approval');
      const waiting = await handle.query(erasureProgressQuery);
      const purgedWhileWaiting = names(calls).filter(
        (n) => n !== 'erasureAuthorize' && n !== 'erasureLocate' && n !== 'erasureClosure' && n !== 'erasureLegalHoldCheck',
      );
      await handle.signal(approveErasureSignal, { approvedBy: 'dpo-7' });
      return { waiting, purgedWhileWaiting, result: await handle.result(), progress: await handle.query(erasureProgressQuery) };
    });

    expect(waiting).toMatchObject({ currentStep: 'approval', approvalDeadline: expect.any(String) });
    expect(Date.parse(waiting.approvalDeadline!) - Date.now()).toBeGreaterThan(30_000);
    expect(purgedWhileWaiting).toEqual([]);
    expect(argsOf(calls, 'erasureRecordApproval')[0][2]).toMatchObject({ required: true, approvedBy: 'dpo-7' });
    expect(argsOf(calls, 'erasureCertify')[0][2]).toMatchObject({ approvedBy: 'dpo-7', approvedAt: expect.any(String) });
    expect(result.erased).toBe(4);
    expect(progress).toMatchObject({ status: 'completed', approvedBy: 'dpo-7' });
  });

  it('times out without purging when nobody approves before the deadline, and shreds its workset', async () => {
    const { activities, calls } = recording(
      stubs({ erasureAuthorize: async () => attempted({ perRecord: false, approvalThreshold: 2, approvalTimeoutMs: 1_000 }) }),
    );
    const { type, progress } = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      return { type: await failureType(handle.result()), progress: await handle.query(erasureProgressQuery) };
    });

    expect(type).toBe(ERASURE_FAILURES.approvalTimeout);
    expect(names(calls)).toEqual(['erasureAuthorize', 'erasureLocate', 'erasureClosure', 'erasureLegalHoldCheck', 'erasureAbandon']);
    expect(argsOf(calls, 'erasureAbandon')[0][2]).toBe(ERASURE_FAILURES.approvalTimeout);
    expect(progress).toMatchObject({
      status: 'approval_timed_out',
      certificateAvailable: false,
      failure: { code: ERASURE_FAILURES.approvalTimeout },
    });
  });

  it('ignores an approval sent before the erasure asks for one', async () => {
    let openClosure!: () => void;
    const closureHeld = new Promise<void>((resolve) => (openClosure = resolve));
    const { activities, calls } = recording(
      stubs({
        erasureAuthorize: async () => attempted({ perRecord: false, approvalThreshold: 2, approvalTimeoutMs: 1_500 }),
        erasureClosure: async () => {
          await closureHeld;
          return attempted(CLOSURE);
        },
      }),
    );
    const { type, progress } = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      await eventually(() => names(calls).includes('erasureClosure'));
      // Sent while the closure is computed: the approval would cover a set nobody has seen yet.
      await handle.signal(approveErasureSignal, { approvedBy: 'dpo-early' });
      openClosure();
      return { type: await failureType(handle.result()), progress: await handle.query(erasureProgressQuery) };
    });

    expect(type).toBe(ERASURE_FAILURES.approvalTimeout);
    expect(progress.approvedBy).toBeUndefined();
    expect(names(calls)).not.toContain('erasurePurgeIndex');
  });

  it('still shreds the workset of an erasure cancelled while it awaits approval', async () => {
    const { activities, calls } = recording(
      stubs({ erasureAuthorize: async () => attempted({ perRecord: false, approvalThreshold: 2, approvalTimeoutMs: 60_000 }) }),
    );
    const { error, progress } = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      await eventually(async () => (await handle.query(erasureProgressQuery)).status === 'awaiting_approval');
      await handle.cancel();
      const error = await handle.result().catch((err: unknown) => err);
      return { error, progress: await handle.query(erasureProgressQuery) };
    });

    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(names(calls).at(-1)).toBe('erasureAbandon');
    expect(names(calls)).not.toContain('erasurePurgeIndex');
    expect(progress).toMatchObject({ status: 'failed', certificateAvailable: false });
  });

  it('ends as denied, at once and without retrying, when authorisation is refused', async () => {
    const { activities, calls } = recording(
      stubs({
        erasureAuthorize: async () => {
          throw denied('POLICY.DENIED');
        },
      }),
    );
    const { type, progress } = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      return { type: await failureType(handle.result()), progress: await handle.query(erasureProgressQuery) };
    });

    expect(type).toBe('POLICY.DENIED');
    expect(names(calls)).toEqual(['erasureAuthorize', 'erasureAbandon']);
    expect(argsOf(calls, 'erasureAbandon')[0][2]).toBe('POLICY.DENIED');
    expect(progress).toMatchObject({ status: 'denied', failure: { code: 'POLICY.DENIED' }, steps: [] });
  });

  it('retries a step that hit an infrastructure error and shows the attempt it took', async () => {
    const { activities, calls } = recording(
      stubs({
        erasurePurgeIndex: async (_tenant, _requestId, set) => {
          if (Context.current().info.attempt === 1) throw new Error('index temporarily unavailable');
          return attempted({ purged: set.recordIds.length });
        },
      }),
    );
    const progress = await env.withWorker(activities, async (client, taskQueue) => {
      const handle = await start(client, taskQueue, input());
      await handle.result();
      return handle.query(erasureProgressQuery);
    });

    expect(argsOf(calls, 'erasurePurgeIndex')).toHaveLength(2);
    expect(progress.steps.find((s) => s.step === 'purge_index')).toMatchObject({ attempts: 2, counts: { purged: 4 } });
    expect(progress.status).toBe('completed');
  });

  it('refuses a malformed tenant or request id before any step runs', async () => {
    const { activities, calls } = recording(stubs());
    const types = await env.withWorker(activities, async (client, taskQueue) => [
      await failureType((await start(client, taskQueue, { ...input(), tenant: 'Acme Corp' })).result()),
      await failureType((await start(client, taskQueue, input('req-1'))).result()),
    ]);

    expect(types).toEqual([ERASURE_FAILURES.invalidInput, ERASURE_FAILURES.invalidInput]);
    expect(calls).toEqual([]);
  });
});
