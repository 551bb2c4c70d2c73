import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import {
  bundleWorkflowCode,
  NativeConnection,
  Runtime,
  Worker,
  type Logger,
  type WorkflowBundle,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '@elma/activities';
import { ELMA_TASK_QUEUE, consolidationTaskQueue } from '@elma/workflows';
import { activeTracing, serveMetrics, type ElmaMetrics, type TemporalTls } from '@elma/infra';
import { erasureStepTiming } from './telemetry';

/**
 * Absolute path of the workflows entry (`workflows/src/index.ts`), resolved through the workspace link.
 * Resolved on use: a built image carries the prebuilt bundle, not the workflow sources.
 */
export const elmaWorkflowsPath = (): string => createRequire(import.meta.url).resolve('@elma/workflows');

/**
 * The workflows as `npm run build` bundled them (scripts/build.mjs), when this module runs from the build
 * output (dist/elma.mjs, with workflow-bundle.js beside it); undefined when it runs from the sources.
 */
export function prebuiltWorkflowBundle(): { codePath: string } | undefined {
  // With traces on, the bundle that has OpenTelemetry's workflow interceptors (scripts/build.mjs writes both).
  const file = activeTracing() ? './workflow-bundle-traced.js' : './workflow-bundle.js';
  const codePath = fileURLToPath(new URL(file, import.meta.url));
  return existsSync(codePath) ? { codePath } : undefined;
}

export interface ElmaWorkerOptions {
  /** Temporal front-end, e.g. `127.0.0.1:7233`. */
  address: string;
  namespace?: string;
  taskQueue?: string;
  /** mTLS to the front end (config `temporal.tls`). */
  tls?: TemporalTls;
  /** The ports the activities run on. */
  deps: ActivityDeps;
  /**
   * A prebuilt bundle (see `bundleElmaWorkflows`); without it the worker uses the build's bundle when it
   * runs from the build output, and bundles the sources on creation (seconds) otherwise.
   */
  workflowBundle?: WorkflowBundleOption;
  /** The process's metrics: erasure step durations are recorded into them. */
  metrics?: ElmaMetrics;
  /** Also serve `GET /metrics` (of `metrics`) here while the worker runs (ELMA_WORKER_METRICS_PORT). */
  metricsListen?: { host: string; port: number };
}

export interface ElmaWorker {
  /** Polls until `shutdown()`; rejects if the worker fails. */
  run(): Promise<void>;
  /** Stops polling, lets in-flight tasks finish, closes the connection. Idempotent. */
  shutdown(): Promise<void>;
}

/** Bundles the workflows once, e.g. to share across several workers in tests; `logger` receives webpack's report. */
export async function bundleElmaWorkflows(options: { logger?: Logger } = {}): Promise<WorkflowBundle> {
  // Made while traces are on, the bundle carries the workflow spans' interceptors (never loaded otherwise).
  const workflowInterceptorModules = activeTracing()?.workflowInterceptorModules;
  return bundleWorkflowCode({ workflowsPath: elmaWorkflowsPath(), logger: options.logger, workflowInterceptorModules });
}

/**
 * Two workers on one connection: the main task queue (erasure, retention,
 * reindex) and the consolidation task queue, whose worker runs one activity
 * and few workflow tasks at a time. A sweep over every subject therefore
 * never holds more than one consolidation activity in this process, however
 * many consolidations are waiting.
 */
export async function createElmaWorker(options: ElmaWorkerOptions): Promise<ElmaWorker> {
  const connection = await NativeConnection.connect({ address: options.address, ...(options.tls ? { tls: options.tls } : {}) });
  const workers: Worker[] = [];
  let metricsServer: { close(): Promise<void> } | undefined;
  try {
    const taskQueue = options.taskQueue ?? ELMA_TASK_QUEUE;
    // One bundle for both workers (bundling takes seconds).
    const workflowBundle =
      options.workflowBundle ?? prebuiltWorkflowBundle() ?? (await bundleElmaWorkflows({ logger: Runtime.instance().logger }));
    const activities = createActivities(options.deps);
    const tracing = activeTracing();
    const interceptors = {
      activity: [...(tracing?.activityInterceptors ?? []), ...(options.metrics ? [erasureStepTiming(options.metrics)] : [])],
    };
    const common = {
      connection,
      namespace: options.namespace ?? 'default',
      workflowBundle,
      activities,
      interceptors,
      ...(tracing ? { sinks: tracing.sinks } : {}),
    };
    workers.push(await Worker.create({ ...common, taskQueue }));
    workers.push(
      await Worker.create({
        ...common,
        taskQueue: consolidationTaskQueue(taskQueue),
        maxConcurrentActivityTaskExecutions: 1,
        maxConcurrentWorkflowTaskExecutions: 2,
      }),
    );
    if (options.metrics && options.metricsListen) metricsServer = await serveMetrics(options.metrics.registry, options.metricsListen);
  } catch (err) {
    await Promise.all(workers.map((worker) => runUnderShutdown(worker)));
    await connection.close();
    throw err;
  }

  let runs: Promise<void>[] | undefined;
  let running: Promise<void> | undefined;
  let closed: Promise<void> | undefined;
  return {
    run() {
      // One worker failing stops the other: a process half polling would look alive and do half the work.
      runs ??= workers.map((worker) =>
        worker.run().catch((error: unknown) => {
          for (const other of workers) if (other.getState() === 'RUNNING') other.shutdown();
          throw error;
        }),
      );
      running ??= Promise.all(runs).then(() => undefined);
      return running;
    },
    shutdown() {
      closed ??= (async () => {
        if (runs) {
          for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
          await Promise.allSettled(runs);
        } else {
          await Promise.all(workers.map((worker) => runUnderShutdown(worker)));
        }
        await connection.close();
        await metricsServer?.close();
      })();
      return closed;
    },
  };
}

/** A worker that never ran still holds a native worker; running it under an immediate shutdown releases it the documented way. */
async function runUnderShutdown(worker: Worker): Promise<void> {
  const done = worker.run();
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await done.catch(() => undefined);
}
