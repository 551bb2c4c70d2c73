import { createRequire } from 'node:module';
import { bundleWorkflowCode, NativeConnection, Worker, type Logger, type WorkflowBundle } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '@elma/activities';
import { ELMA_TASK_QUEUE } from '@elma/workflows';
import type { TemporalTls } from '@elma/infra';

/** Absolute path of the workflows entry (`workflows/src/index.ts`), resolved through the workspace link. */
export const ELMA_WORKFLOWS_PATH: string = createRequire(import.meta.url).resolve('@elma/workflows');

export interface ElmaWorkerOptions {
  /** Temporal front-end, e.g. `127.0.0.1:7233`. */
  address: string;
  namespace?: string;
  taskQueue?: string;
  /** mTLS to the front end (config `temporal.tls`). */
  tls?: TemporalTls;
  /** The ports the activities run on. */
  deps: ActivityDeps;
  /** A prebuilt bundle (see `bundleElmaWorkflows`); without it the worker bundles on creation (seconds). */
  workflowBundle?: WorkflowBundle;
}

export interface ElmaWorker {
  /** Polls until `shutdown()`; rejects if the worker fails. */
  run(): Promise<void>;
  /** Stops polling, lets in-flight tasks finish, closes the connection. Idempotent. */
  shutdown(): Promise<void>;
}

/** Bundles the workflows once, e.g. to share across several workers in tests; `logger` receives webpack's report. */
export async function bundleElmaWorkflows(options: { logger?: Logger } = {}): Promise<WorkflowBundle> {
  return bundleWorkflowCode({ workflowsPath: ELMA_WORKFLOWS_PATH, logger: options.logger });
}

export async function createElmaWorker(options: ElmaWorkerOptions): Promise<ElmaWorker> {
  const connection = await NativeConnection.connect({ address: options.address, ...(options.tls ? { tls: options.tls } : {}) });
  let worker: Worker;
  try {
    worker = await Worker.create({
      connection,
      namespace: options.namespace ?? 'default',
      taskQueue: options.taskQueue ?? ELMA_TASK_QUEUE,
      ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: ELMA_WORKFLOWS_PATH }),
      activities: createActivities(options.deps),
    });
  } catch (err) {
    await connection.close();
    throw err;
  }

  let running: Promise<void> | undefined;
  let closed: Promise<void> | undefined;
  return {
    run() {
      running ??= worker.run();
      return running;
    },
    shutdown() {
      closed ??= (async () => {
        // A worker that never ran still holds a native worker; running it under an immediate shutdown
        // releases it the documented way.
        const done = running ?? worker.run();
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await done.catch(() => undefined);
        await connection.close();
      })();
      return closed;
    },
  };
}
