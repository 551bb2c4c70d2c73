import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure, Connection, WorkflowFailedError } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TenantViews } from '@elma/activities';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { bundleElmaWorkflows, createElmaWorker, runReindex, type ElmaWorker } from '@elma/worker';
import { INVALID_TENANT } from './messages';

/** The real views, with a switch that makes the next replays fail the way a flaky disk would. */
class FlakyViews implements TenantViews {
  readonly calls: string[] = [];
  replayFailuresLeft = 0;
  /** Replaced when the test reopens the process's engines. */
  constructor(public real: TenantViews) {}

  drop(tenant: string) {
    this.calls.push(`drop:${tenant}`);
    return this.real.drop(tenant);
  }

  async replay(tenant: string) {
    this.calls.push(`replay:${tenant}`);
    if (this.replayFailuresLeft > 0) {
      this.replayFailuresLeft--;
      throw new Error('index temporarily unavailable');
    }
    return this.real.replay(tenant);
  }

  strategy() {
    return this.real.strategy();
  }

  rebuildBeside(tenant: string) {
    this.calls.push(`rebuildBeside:${tenant}`);
    return this.real.rebuildBeside(tenant);
  }
}

const principal = (tenant: string): Principal => ({
  tenant,
  sub: 'agent-1',
  roles: ['agent'],
  purposes: ['support'],
  clearance: 'internal',
});

const QUERIES = ['交付风险', 'delivery risk', 'contract renewal March', '发票 付款', 'ACME headquarters'];

describe('ReindexWorkflow on a real Temporal dev server, over the real event log and index', () => {
  const address = inject('temporalAddress') ?? process.env.TEMPORAL_ADDRESS;
  const namespace = inject('temporalNamespace') ?? 'default';
  const taskQueue = `elma-test-${Date.now()}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-reindex-'));
  let elma: Elma;
  let views: FlakyViews;
  let worker: ElmaWorker;
  let running: Promise<void>;
  let connection: Connection;

  const snapshot = async (tenant: string) =>
    Promise.all(
      QUERIES.map(async (query) =>
        (await elma.recall.recall(principal(tenant), { query, purpose: 'support', budgetTokens: 400 })).items.map((i) => [
          i.id,
          i.score.toFixed(6),
        ]),
      ),
    );

  beforeAll(async () => {
    if (!address) throw new Error('no Temporal server: run with the tests/temporal.global-setup.ts globalSetup or set TEMPORAL_ADDRESS');
    const logger = new DefaultLogger('ERROR');
    try {
      Runtime.install({ logger });
    } catch {
      // Another spec in this process already installed the runtime; keep it.
    }
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
    await elma.runner.start();
    views = new FlakyViews(elma.views);
    const at = (i: number) => new Date(Date.UTC(2026, 10, 1 + i)).toISOString();
    const texts = [
      '客户说交付风险很高，需要确认发货日期。',
      'The customer says delivery risk is low.',
      'The contract renewal is planned for March.',
      '发票已经开出，等待客户付款。',
    ];
    for (const tenant of ['acme', 'globex']) {
      const result = await elma.ingest.ingest(principal(tenant), {
        events: [
          ...texts.map((text, i) => ({
            subject: `cust-${i % 2}`,
            occurredAt: at(i),
            activity: 'chat.turn',
            content: { text },
            source: { system: 'crm', externalId: `${tenant}-${i}` },
            purposes: ['support'],
          })),
          {
            subject: 'cust-0',
            occurredAt: at(9),
            activity: 'crm.update',
            content: { text: 'ACME HQ moved', fact: { entity: 'ACME', attribute: 'headquarters', value: 'Berlin' } },
            source: { system: 'crm', externalId: `${tenant}-fact` },
            purposes: ['support'],
          },
        ],
      });
      await elma.runner.waitFor(BigInt(result.position));
      await elma.memories.write(principal(tenant), {
        content: { text: 'Delivery risk summary: high in China, low in Europe' },
        sourceEventIds: [result.events[0].id, result.events[1].id],
      });
    }
    await elma.runner.waitFor(await elma.log.headPosition());
    worker = await createElmaWorker({
      address,
      namespace,
      taskQueue,
      deps: { views },
      workflowBundle: await bundleElmaWorkflows({ logger }),
    });
    running = worker.run();
    connection = await Connection.connect({ address });
  });

  afterAll(async () => {
    await connection?.close();
    await worker?.shutdown();
    await running;
    await elma?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const client = () => ({ connection, namespace, taskQueue });

  it('drops the tenant views, replays its log, and answers every query exactly as before', async () => {
    // Packing weighs redundancy by the vectors: compare answers once every record has its vector again.
    await elma.embeddings.waitForEmbedded(undefined, 30_000);
    const before = await snapshot('acme');
    const otherBefore = await snapshot('globex');
    expect(before.flat().length).toBeGreaterThan(0);
    views.calls.length = 0;

    const result = await runReindex(client(), 'acme');

    expect(views.calls).toEqual(['drop:acme', 'replay:acme']);
    // 5 ingested events (whose 6 extracted records, 5 episodic + 1 semantic, are derived from them) and 1
    // explicit memory event.
    expect(result).toEqual({ tenant: 'acme', dropped: 7, replayedEvents: 6, memories: 7 });
    await elma.embeddings.waitForEmbedded('acme', 30_000);
    expect(await snapshot('acme')).toEqual(before);
    expect(await snapshot('globex')).toEqual(otherBefore);
  });

  it('retries a replay that hit an infrastructure error, without dropping twice', async () => {
    views.calls.length = 0;
    views.replayFailuresLeft = 1;

    const result = await runReindex(client(), 'globex');

    expect(views.calls).toEqual(['drop:globex', 'replay:globex', 'replay:globex']);
    expect(result).toMatchObject({ tenant: 'globex', memories: 7 });
    expect(await elma.index.count('globex')).toBe(7);
  });

  it('fails at once, without retrying or touching any view, when the tenant id is empty', async () => {
    views.calls.length = 0;
    const error = await runReindex(client(), '').catch((err: unknown) => err);

    expect(error).toBeInstanceOf(WorkflowFailedError);
    const cause = (error as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause).toMatchObject({ type: INVALID_TENANT, nonRetryable: true });
    expect(views.calls).toEqual([]);
  });

  it('rebuilds a tenant whose index file is corrupt within seconds, dropping it unread, and answers as before', async () => {
    const before = await snapshot('globex');
    // Given globex's index file overwritten at its header while the process was down,
    await elma.close();
    const fd = openSync(join(dataDir, 'index', 'tenant-globex.db'), 'r+');
    writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 0);
    closeSync(fd);
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
    await elma.runner.start();
    views.real = elma.views;
    await expect(snapshot('globex')).rejects.toMatchObject({ code: 'INDEX.PARTITION_CORRUPT' });

    // when it is rebuilt, the rebuild neither reads the damaged file nor retries for minutes,
    const started = Date.now();
    const result = await runReindex(client(), 'globex');
    expect(Date.now() - started).toBeLessThan(20_000);

    // and every query answers as before the damage.
    expect(result).toMatchObject({ tenant: 'globex', replayedEvents: 6, memories: 7 });
    expect(await snapshot('globex')).toEqual(before);
    expect((await elma.health()).index).toEqual({ engine: 'sqlite', up: true });
  });
});
