import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, inject } from 'vitest';

/** Activities as a worker registers them: named async functions. */
type Activities = Record<string, (...args: never[]) => Promise<unknown>>;

export interface WorkflowTestEnv {
  /**
   * Runs `body` while a worker on a task queue of its own serves ELMA's bundled workflows with `activities`
   * (stubs standing in for the real ones at the activity boundary); the worker stops when `body` settles.
   */
  withWorker<T>(activities: Activities, body: (client: Client, taskQueue: string) => Promise<T>): Promise<T>;
  teardown(): Promise<void>;
}

/**
 * A Temporal test environment for workflow-level tests on the run's dev server (the project's own `temporal`
 * CLI, never the SDK's download, with ELMA's search attributes registered), with the workflows bundled once for
 * the run as the worker bundles them. Real time: the time-skipping server is a separate Java download, and the workflows take their waits
 * (approval timeout, retries) from the stubbed activities or in seconds.
 */
export async function createWorkflowTestEnv(): Promise<WorkflowTestEnv> {
  const logger = new DefaultLogger('ERROR');
  try {
    // Stubs fail on purpose: keep the worker's warnings about failed attempts out of the test output.
    Runtime.install({ logger, telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  } catch {
    // Another suite in this process installed the runtime already.
  }
  // The run's dev server and workflow bundle (tests/temporal.global-setup.ts): each suite works on task queues
  // of its own, so suites share them instead of starting a server and bundling each.
  const env = await TestWorkflowEnvironment.createFromExistingServer({
    address: inject('temporalAddress'),
    namespace: inject('temporalNamespace'),
  });
  const workflowBundle = { codePath: inject('workflowBundlePath') };
  return {
    async withWorker(activities, body) {
      const taskQueue = `wf-test-${randomUUID()}`;
      const worker = await Worker.create({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        taskQueue,
        workflowBundle,
        activities,
      });
      return worker.runUntil(() => body(env.client, taskQueue));
    },
    teardown: () => env.teardown(),
  };
}

/** The suite's environment: created before its first test and torn down after its last. */
export function suiteWorkflowEnv(): Pick<WorkflowTestEnv, 'withWorker'> {
  let env: WorkflowTestEnv | undefined;
  beforeAll(async () => {
    env = await createWorkflowTestEnv();
  }, 120_000);
  afterAll(async () => {
    await env?.teardown();
  });
  return { withWorker: (activities, body) => env!.withWorker(activities, body) };
}

/** One activity call as the stub saw it. */
export interface Call {
  name: string;
  args: unknown[];
}

/** The same activities, each recording its name and arguments in `calls` before it runs. */
export function recording<T extends Activities>(activities: T): { activities: T; calls: Call[] } {
  const calls: Call[] = [];
  const wrapped = Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      (...args: never[]) => {
        calls.push({ name, args });
        return fn(...args);
      },
    ]),
  ) as T;
  return { activities: wrapped, calls };
}

/** The names of the activities called, in order. */
export const names = (calls: Call[]) => calls.map((c) => c.name);

/** The arguments of each call of one activity, in order. */
export const argsOf = (calls: Call[], name: string) => calls.filter((c) => c.name === name).map((c) => c.args);

/** Resolves `until()` is true, polling; fails after `timeoutMs`. */
export async function eventually(until: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await until());) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
