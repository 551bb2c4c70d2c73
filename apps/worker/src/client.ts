import { randomUUID } from 'node:crypto';
import {
  Client,
  Connection,
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  isGrpcServiceError,
} from '@temporalio/client';
import { ErasureStatus, type ErasureProgress, type ErasureReason } from '@elma/domain';
import { TemporalUnavailable, activeTracing, type TemporalTls } from '@elma/infra';
import {
  ELMA_TASK_QUEUE,
  consolidationTaskQueue,
  ElmaReason,
  ElmaRequestId,
  ElmaStatus,
  ElmaTenant,
  approveErasureSignal,
  erasureProgressQuery,
  erasureWorkflowId,
  reindexWorkflowId,
  reindexStageQuery,
  type ReindexStage,
  type ErasureResult,
  type ReindexResult,
  type ConsolidationSweepResult,
  type consolidationSweepWorkflow,
  type tenantConsolidationWorkflow,
  consolidateSubjectsSignal,
  type erasureWorkflow,
  type reindexWorkflow,
  offboardWorkflowId,
  type offboardWorkflow,
  type OffboardResult,
  subjectAccessWorkflowId,
  type SubjectAccessInput,
  type SubjectAccessResult,
  type subjectAccessWorkflow,
} from '@elma/workflows';

export interface ElmaClientOptions {
  /** An open connection to reuse; otherwise one is opened to `address` and closed afterwards. */
  connection?: Connection;
  address?: string;
  namespace?: string;
  taskQueue?: string;
  /** mTLS to the front end (config `temporal.tls`). */
  tls?: TemporalTls;
}

/** Starts a reindex of the tenant's views and returns its ids without waiting. */
export async function startReindex(
  options: ElmaClientOptions,
  tenant: string,
  requestId: string = randomUUID(),
): Promise<{ workflowId: string; runId: string }> {
  return withClient(options, async (client) => {
    const handle = await client.workflow.start<typeof reindexWorkflow>('reindexWorkflow', {
      taskQueue: options.taskQueue ?? ELMA_TASK_QUEUE,
      workflowId: reindexWorkflowId(tenant, requestId),
      args: [{ tenant }],
      typedSearchAttributes: [{ key: ElmaTenant, value: tenant }],
    });
    return { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
  });
}

/**
 * Reindexes the tenant's views and waits for the result; a failed workflow rejects with `WorkflowFailedError`.
 * `onStage` hears the workflow's stage (its query) when it changes, polled every second, for a progress display.
 */
export async function runReindex(
  options: ElmaClientOptions,
  tenant: string,
  requestId: string = randomUUID(),
  onStage?: (stage: ReindexStage) => void,
): Promise<ReindexResult> {
  return withClient(options, async (client) => {
    const handle = await client.workflow.start<typeof reindexWorkflow>('reindexWorkflow', {
      taskQueue: options.taskQueue ?? ELMA_TASK_QUEUE,
      workflowId: reindexWorkflowId(tenant, requestId),
      args: [{ tenant }],
      typedSearchAttributes: [{ key: ElmaTenant, value: tenant }],
    });
    const result = handle.result();
    if (!onStage) return result;
    let finished = false;
    const settled = result.then(
      () => void (finished = true),
      () => void (finished = true),
    );
    let last: ReindexStage | undefined;
    while (!finished) {
      // A query that fails (the workflow just closed, a worker restarting) only skips one look.
      const stage = await handle.query(reindexStageQuery).catch(() => undefined);
      if (stage !== undefined && stage !== last && !finished) onStage((last = stage));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([settled, new Promise((resolve) => (timer = setTimeout(resolve, REINDEX_POLL_MS)))]);
      clearTimeout(timer);
    }
    return result;
  });
}

const REINDEX_POLL_MS = 1_000;

async function withClient<T>(options: ElmaClientOptions, use: (client: Client) => Promise<T>): Promise<T> {
  const connection =
    options.connection ?? (await Connection.connect({ address: options.address, ...(options.tls ? { tls: options.tls } : {}) }));
  try {
    // With traces on, starts, signals and queries are spans whose context reaches the workflow in its headers.
    const interceptors = { workflow: activeTracing()?.clientInterceptors ?? [] };
    return await use(new Client({ connection, namespace: options.namespace ?? 'default', interceptors }));
  } finally {
    if (!options.connection) await connection.close();
  }
}

/**
 * Starts the erasure of a stored request; returns at once. Idempotent: the workflow id is the request's, so a
 * second start of the same request (the outbox drained after a start whose answer was lost) finds it running.
 */
export async function startErasure(
  options: ElmaClientOptions,
  input: { tenant: string; requestId: string; reason: ErasureReason },
): Promise<{ workflowId: string; runId?: string }> {
  return withClient(options, async (client) => {
    try {
      const handle = await client.workflow.start<typeof erasureWorkflow>('erasureWorkflow', {
        taskQueue: options.taskQueue ?? ELMA_TASK_QUEUE,
        workflowId: erasureWorkflowId(input.tenant, input.requestId),
        // Never a second run for one request, even after the first has closed.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        args: [input],
        typedSearchAttributes: [
          { key: ElmaTenant, value: input.tenant },
          { key: ElmaRequestId, value: input.requestId },
          { key: ElmaReason, value: input.reason },
          { key: ElmaStatus, value: 'running' },
        ],
      });
      return { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return { workflowId: erasureWorkflowId(input.tenant, input.requestId) };
      throw error;
    }
  });
}

/**
 * Live progress of an erasure, from the workflow's query (a finished workflow is replayed to answer it).
 * Undefined when Temporal has no such workflow.
 */
export async function erasureProgress(options: ElmaClientOptions, tenant: string, requestId: string): Promise<ErasureProgress | undefined> {
  return withClient(options, async (client) => {
    try {
      return await client.workflow.getHandle(erasureWorkflowId(tenant, requestId)).query(erasureProgressQuery);
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
  });
}

/** Sends the approval signal; the caller has checked the approver's role and that approval is awaited. */
export async function approveErasure(options: ElmaClientOptions, tenant: string, requestId: string, approvedBy: string): Promise<void> {
  await withClient(options, (client) =>
    client.workflow.getHandle(erasureWorkflowId(tenant, requestId)).signal(approveErasureSignal, { approvedBy }),
  );
}

/** Waits for an erasure's end; rejects with `WorkflowFailedError` when it failed. */
export async function erasureResult(options: ElmaClientOptions, tenant: string, requestId: string): Promise<ErasureResult> {
  return withClient(options, (client) => client.workflow.getHandle<typeof erasureWorkflow>(erasureWorkflowId(tenant, requestId)).result());
}

export const RETENTION_SCHEDULE_ID = 'elma-retention-sweep';
export const CONSOLIDATION_SCHEDULE_ID = 'elma-consolidation';

/** Creates the retention sweep schedule, or updates its interval; idempotent. */
export function ensureRetentionSchedule(
  options: ElmaClientOptions,
  everyMinutes: number,
  scheduleId: string = RETENTION_SCHEDULE_ID,
): Promise<void> {
  return ensureSchedule(options, scheduleId, 'retentionSweepWorkflow', everyMinutes);
}

/** Creates the consolidation sweep schedule (every tenant, one subject at a time), or updates its interval; idempotent. */
export function ensureConsolidationSchedule(
  options: ElmaClientOptions,
  everyMinutes: number,
  scheduleId: string = CONSOLIDATION_SCHEDULE_ID,
): Promise<void> {
  return ensureSchedule(options, scheduleId, 'consolidationSweepWorkflow', everyMinutes);
}

async function ensureSchedule(options: ElmaClientOptions, scheduleId: string, workflowType: string, everyMinutes: number): Promise<void> {
  await withClient(options, async (client) => {
    const spec = { intervals: [{ every: `${everyMinutes}m` as const }] };
    const action = {
      type: 'startWorkflow' as const,
      workflowType,
      taskQueue:
        workflowType === 'consolidationSweepWorkflow' ? consolidationTaskQueue(options.taskQueue) : (options.taskQueue ?? ELMA_TASK_QUEUE),
      args: workflowType === 'consolidationSweepWorkflow' ? [] : [{}],
    };
    try {
      await client.schedule.create({ scheduleId, spec, action, policies: { overlap: ScheduleOverlapPolicy.SKIP } });
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
      await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action }));
    }
  });
}

/**
 * Hands one subject (named by one of its records) to its tenant's triggered
 * consolidation, starting that workflow if none runs; returns at once. Used
 * by the projection's triggers (N new events, a session end). Subjects that
 * arrive while a pass runs go together into the next one.
 */
export async function startConsolidation(options: ElmaClientOptions, tenant: string, subjectRef: string): Promise<void> {
  await withClient(options, async (client) => {
    await client.workflow.signalWithStart<typeof tenantConsolidationWorkflow, [string[]]>('tenantConsolidationWorkflow', {
      taskQueue: consolidationTaskQueue(options.taskQueue),
      // One per tenant and task queue (deployments sharing a Temporal namespace keep apart).
      workflowId: `consolidate-${tenant}-${options.taskQueue ?? ELMA_TASK_QUEUE}`,
      args: [{ tenant }],
      signal: consolidateSubjectsSignal,
      signalArgs: [[subjectRef]],
      typedSearchAttributes: [{ key: ElmaTenant, value: tenant }],
    });
  });
}

/**
 * How long an API call may wait for Temporal. The client's own retries would otherwise keep a request
 * waiting for a server that is down; past this the API answers 503 TEMPORAL.UNAVAILABLE. The reachability
 * check is shorter: it runs before an erasure request is stored, on every POST /v1/erasures.
 */
export const TEMPORAL_CALL_DEADLINE_MS = 5_000;
export const TEMPORAL_REACHABLE_DEADLINE_MS = 2_000;

/** gRPC status codes (grpc-js is not a direct dependency): DEADLINE_EXCEEDED 4, UNAVAILABLE 14. */
const UNREACHABLE_CODES = [4, 14];

/** Whether an error says the server could not be reached in time (down, refusing, or past the deadline). */
export function isTemporalUnreachable(error: unknown): boolean {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    if (isGrpcServiceError(e) && UNREACHABLE_CODES.includes(e.code)) return true;
  }
  return false;
}

/** Runs one consolidation sweep now (what the Schedule starts) and waits for its totals. */
export async function runConsolidationSweep(options: ElmaClientOptions): Promise<ConsolidationSweepResult> {
  return withClient(options, (client) =>
    client.workflow.execute<typeof consolidationSweepWorkflow>('consolidationSweepWorkflow', {
      taskQueue: consolidationTaskQueue(options.taskQueue),
      workflowId: `consolidation-sweep-${randomUUID()}`,
    }),
  );
}

/** The erasure side of the API over one Temporal connection (see `ErasureWorkflows` in @elma/api). */
export function temporalErasureWorkflows(options: ElmaClientOptions & { connection: Connection }) {
  const { connection } = options;
  /** Runs one call under the deadline; an unreachable server becomes TemporalUnavailable. */
  const unavailable = () => new TemporalUnavailable('Temporal is not reachable; erasures cannot start or be followed until it is back');
  const bounded = async <T>(call: () => Promise<T>, deadlineMs = TEMPORAL_CALL_DEADLINE_MS): Promise<T> => {
    // The gRPC deadline ends the call; the timer bounds the answer even when the client's reconnect backoff overruns it.
    let timer: NodeJS.Timeout | undefined;
    const overrun = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(unavailable()), deadlineMs);
    });
    try {
      return await Promise.race([connection.withDeadline(Date.now() + deadlineMs, call), overrun]);
    } catch (error) {
      if (isTemporalUnreachable(error)) throw unavailable();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    reachable: () =>
      bounded(async () => {
        const { status } = await connection.healthService.check({});
        if (status !== 1) throw new TemporalUnavailable('Temporal reports itself not serving');
      }, TEMPORAL_REACHABLE_DEADLINE_MS),
    start: async (input: { tenant: string; requestId: string; reason: ErasureReason }) => {
      await bounded(() => startErasure(options, input));
    },
    progress: (tenant: string, requestId: string) => bounded(() => erasureProgress(options, tenant, requestId)),
    approve: (tenant: string, requestId: string, approvedBy: string) =>
      bounded(() => approveErasure(options, tenant, requestId, approvedBy)),
    countByStatus: () => bounded(() => countErasures(options)),
  };
}

/**
 * Erasure workflows of this task queue by status (the `ElmaStatus` search attribute the workflow keeps up to
 * date), every status listed, 0 included: one count per status, as Temporal's visibility holds them.
 */
export async function countErasures(options: ElmaClientOptions): Promise<Record<ErasureStatus, number>> {
  const taskQueue = options.taskQueue ?? ELMA_TASK_QUEUE;
  return withClient(options, async (client) => {
    const counts = await Promise.all(
      ErasureStatus.options.map(async (status) => {
        // Both values are ELMA's own (the configured queue, an enum): quoted, never a caller's text.
        const query = `WorkflowType = 'erasureWorkflow' AND TaskQueue = '${taskQueue.replaceAll("'", '')}' AND ElmaStatus = '${status}'`;
        return [status, (await client.workflow.count(query)).count] as const;
      }),
    );
    return Object.fromEntries(counts) as Record<ErasureStatus, number>;
  });
}

/**
 * Starts the off-boarding of an approved request; returns at once. Idempotent: the workflow id is the
 * request's, so a second start (an approval repeated after a lost answer) finds it running or done.
 */
export async function startOffboarding(options: ElmaClientOptions, input: { tenant: string; requestId: string }): Promise<void> {
  await withClient(options, async (client) => {
    try {
      await client.workflow.start<typeof offboardWorkflow>('offboardWorkflow', {
        taskQueue: options.taskQueue ?? ELMA_TASK_QUEUE,
        workflowId: offboardWorkflowId(input.tenant, input.requestId),
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        args: [input],
        typedSearchAttributes: [
          { key: ElmaTenant, value: input.tenant },
          { key: ElmaRequestId, value: input.requestId },
        ],
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  });
}

/** Waits for an off-boarding's end; rejects with `WorkflowFailedError` when it failed. */
export async function offboardingResult(options: ElmaClientOptions, tenant: string, requestId: string): Promise<OffboardResult> {
  return withClient(options, (client) =>
    client.workflow.getHandle<typeof offboardWorkflow>(offboardWorkflowId(tenant, requestId)).result(),
  );
}

/** The off-boarding side of the API over one Temporal connection (see `OffboardWorkflows` in @elma/api). */
export function temporalOffboardWorkflows(options: ElmaClientOptions & { connection: Connection }) {
  const erasures = temporalErasureWorkflows(options);
  return {
    reachable: erasures.reachable,
    start: async (input: { tenant: string; requestId: string }) => {
      try {
        await options.connection.withDeadline(Date.now() + TEMPORAL_CALL_DEADLINE_MS, () => startOffboarding(options, input));
      } catch (error) {
        if (isTemporalUnreachable(error))
          throw new TemporalUnavailable('Temporal is not reachable; the off-boarding cannot start until it is back');
        throw error;
      }
    },
  };
}

/** Starts the workflow of a stored subject-access request; idempotent by request id. */
export async function startSubjectAccess(options: ElmaClientOptions, input: SubjectAccessInput): Promise<{ workflowId: string }> {
  return withClient(options, async (client) => {
    const workflowId = subjectAccessWorkflowId(input.tenant, input.requestId);
    try {
      await client.workflow.start<typeof subjectAccessWorkflow>('subjectAccessWorkflow', {
        taskQueue: options.taskQueue ?? ELMA_TASK_QUEUE,
        workflowId,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        args: [input],
        typedSearchAttributes: [
          { key: ElmaTenant, value: input.tenant },
          { key: ElmaRequestId, value: input.requestId },
          { key: ElmaStatus, value: 'running' },
        ],
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    return { workflowId };
  });
}

/** Waits for a subject-access workflow's end (after its export's expiry); rejects with `WorkflowFailedError` when it failed. */
export async function subjectAccessResult(options: ElmaClientOptions, tenant: string, requestId: string): Promise<SubjectAccessResult> {
  return withClient(options, (client) =>
    client.workflow.getHandle<typeof subjectAccessWorkflow>(subjectAccessWorkflowId(tenant, requestId)).result(),
  );
}

/** The subject-access side of the API over one Temporal connection (see `SubjectAccessWorkflows` in @elma/api). */
export function temporalSubjectAccessWorkflows(options: ElmaClientOptions & { connection: Connection }) {
  const erasures = temporalErasureWorkflows(options);
  const { connection } = options;
  const unavailable = () => new TemporalUnavailable('Temporal is not reachable; subject access requests cannot start until it is back');
  return {
    reachable: erasures.reachable,
    start: async (input: SubjectAccessInput) => {
      try {
        await connection.withDeadline(Date.now() + TEMPORAL_CALL_DEADLINE_MS, () => startSubjectAccess(options, input));
      } catch (error) {
        if (isTemporalUnreachable(error)) throw unavailable();
        throw error;
      }
    },
  };
}
