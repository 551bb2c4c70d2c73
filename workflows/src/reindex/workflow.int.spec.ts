import { randomUUID } from 'node:crypto';
import { ApplicationFailure, Connection, WorkflowFailedError } from '@temporalio/client';
import { DefaultLogger, Runtime, type WorkflowBundle } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TenantViews } from '@elma/activities';
import { bundleElmaWorkflows, createElmaWorker, runReindex, type ElmaWorker } from '@elma/worker';
import { INVALID_TENANT } from './messages';

// TODO(lead): swap RecordingViews for the real projection (infra/src/projection/) over a temp SQLite
// event log + index, seeded with a tenant's events, and assert the rebuilt views.
class RecordingViews implements TenantViews {
  readonly calls: string[] = [];
  replayFailuresLeft = 0;

  constructor(private readonly tenants: Record<string, { records: number; events: number; memories: number }>) {}

  async drop(tenant: string): Promise<number> {
    this.calls.push(`drop:${tenant}`);
    return this.tenants[tenant]?.records ?? 0;
  }

  async replay(tenant: string): Promise<{ events: number; memories: number }> {
    this.calls.push(`replay:${tenant}`);
    if (this.replayFailuresLeft > 0) {
      this.replayFailuresLeft--;
      throw new Error('index temporarily unavailable');
    }
    const { events = 0, memories = 0 } = this.tenants[tenant] ?? {};
    return { events, memories };
  }
}

describe('reindex workflow (real Temporal dev server)', () => {
  const address = inject('temporalAddress') ?? process.env.TEMPORAL_ADDRESS;
  const namespace = inject('temporalNamespace') ?? 'default';
  const taskQueue = `elma-test-${randomUUID()}`;
  const views = new RecordingViews({ acme: { records: 3, events: 10, memories: 4 }, globex: { records: 0, events: 2, memories: 1 } });
  let bundle: WorkflowBundle;
  let worker: ElmaWorker;
  let running: Promise<void>;
  let connection: Connection;

  beforeAll(async () => {
    if (!address) throw new Error('no Temporal server: run with the tests/temporal.global-setup.ts globalSetup or set TEMPORAL_ADDRESS');
    // Expected failures below would otherwise be logged as warnings; real problems still surface as errors.
    const logger = new DefaultLogger('ERROR');
    try {
      Runtime.install({ logger });
    } catch {
      // Another spec in this process already installed the runtime; keep it.
    }
    bundle = await bundleElmaWorkflows({ logger });
    worker = await createElmaWorker({ address, namespace, taskQueue, deps: { views }, workflowBundle: bundle });
    running = worker.run();
    connection = await Connection.connect({ address });
  });

  afterAll(async () => {
    await connection?.close();
    await worker?.shutdown();
    await running;
  });

  const client = () => ({ connection, namespace, taskQueue });

  it('drops the tenant views, then replays its log, and reports the counts', async () => {
    views.calls.length = 0;

    const result = await runReindex(client(), 'acme');

    expect(views.calls).toEqual(['drop:acme', 'replay:acme']);
    expect(result).toEqual({ tenant: 'acme', dropped: 3, replayedEvents: 10, memories: 4 });
  });

  it('retries a replay that hit an infrastructure error, without dropping twice', async () => {
    views.calls.length = 0;
    views.replayFailuresLeft = 1;

    const result = await runReindex(client(), 'globex');

    expect(views.calls).toEqual(['drop:globex', 'replay:globex', 'replay:globex']);
    expect(result).toEqual({ tenant: 'globex', dropped: 0, replayedEvents: 2, memories: 1 });
  });

  it('fails at once, without retrying or touching any view, when the tenant id is empty', async () => {
    views.calls.length = 0;
    const startedAt = Date.now();

    const error = await runReindex(client(), '').catch((err: unknown) => err);

    expect(error).toBeInstanceOf(WorkflowFailedError);
    const cause = (error as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause).toMatchObject({ type: INVALID_TENANT, nonRetryable: true });
    expect(views.calls).toEqual([]);
    expect(Date.now() - startedAt).toBeLessThan(5_000);
  });
});
