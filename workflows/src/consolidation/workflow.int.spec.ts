import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { createElmaWorker, runConsolidationSweep, startConsolidation, type ElmaWorker } from '@elma/worker';
import { consolidationTaskQueue } from '../task-queue';

const principal: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };

describe('the consolidation sweep on a real Temporal dev server', () => {
  const address = inject('temporalAddress');
  const taskQueue = `elma-sweep-${randomUUID()}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-sweep-'));
  const SUBJECTS = 60;
  let elma: Elma;
  let worker: ElmaWorker;
  let running: Promise<void>;
  let connection: Connection;

  beforeAll(async () => {
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
    await elma.runner.start();
    // Three notes a day per subject: enough for a session summary each.
    const events = Array.from({ length: SUBJECTS * 3 }, (_, i) => ({
      subject: `cust-${i % SUBJECTS}`,
      occurredAt: new Date(Date.UTC(2026, 10, 2, 9) + i * 60_000).toISOString(),
      activity: 'chat.turn',
      content: { text: `note ${i}: customer ${i % SUBJECTS} asked about pallet shipments from the Harwick depot` },
      source: { system: 'crm', channel: 'chat', externalId: `s-${i}` },
      purposes: ['support'],
    }));
    const { position } = await elma.ingest.ingest(principal, { events });
    await elma.runner.waitFor(BigInt(position), 120_000);
    worker = await createElmaWorker({
      address,
      taskQueue,
      deps: { views: elma.views, erasure: elma.erasure, consolidation: elma.consolidation },
    });
    running = worker.run();
    connection = await Connection.connect({ address });
  }, 180_000);
  afterAll(async () => {
    await connection?.close();
    await worker?.shutdown();
    await running?.catch(() => undefined);
    await elma?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('consolidates every subject of every tenant, in batches on the consolidation task queue, and a rerun creates nothing', async () => {
    const first = await runConsolidationSweep({ connection, taskQueue });
    expect(first.tenants).toEqual([expect.objectContaining({ tenant: 'acme', subjects: SUBJECTS })]);
    expect(first.tenants[0].created).toBeGreaterThanOrEqual(SUBJECTS);

    const again = await runConsolidationSweep({ connection, taskQueue });
    expect(again.tenants[0]).toMatchObject({ subjects: SUBJECTS, created: 0, unchanged: first.tenants[0].created });

    // The sweep ran on the queue whose worker takes one activity at a time, a few subjects per activity.
    const client = new Client({ connection });
    const sweeps = [];
    for await (const execution of client.workflow.list({
      query: `WorkflowType = 'consolidationSweepWorkflow' AND TaskQueue = '${consolidationTaskQueue(taskQueue)}'`,
    }))
      sweeps.push(execution);
    expect(sweeps.length).toBe(2);
    const history = await client.workflow.getHandle(sweeps[0].workflowId).fetchHistory();
    const scheduled = (history.events ?? []).filter((e) =>
      e.activityTaskScheduledEventAttributes?.activityType?.name?.startsWith('consolidateSubject'),
    );
    expect(scheduled.length).toBeLessThan(SUBJECTS / 10);
  });

  it('gathers the triggers of a tenant into a few passes instead of one workflow per trigger', async () => {
    // One record id per subject, as the projection names subjects in its triggers.
    const bySubject = new Map<string, string>();
    for await (const entry of elma.index.lineage('acme')) if (!bySubject.has(entry.subject)) bySubject.set(entry.subject, entry.id);
    const refs = [...bySubject.values()];
    expect(refs).toHaveLength(SUBJECTS);
    // As the projection fires them under sustained ingest: one trigger per subject, all at once.
    await Promise.all(refs.map((ref) => startConsolidation({ connection, taskQueue }, 'acme', ref)));
    const client = new Client({ connection });
    const handle = client.workflow.getHandle(`consolidate-acme-${taskQueue}`);
    // The subjects each scheduled pass took (its second argument), and how many passes completed.
    const passes = async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      const taken = events
        .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'consolidateSubjects')
        .map(
          (e) => JSON.parse(Buffer.from(e.activityTaskScheduledEventAttributes!.input!.payloads![1].data!).toString('utf8')) as string[],
        );
      return { taken, completed: events.filter((e) => e.activityTaskCompletedEventAttributes).length };
    };
    for (const deadline = Date.now() + 60_000; ;) {
      const { taken, completed } = await passes();
      if (new Set(taken.flat()).size === refs.length && completed === taken.length) break;
      if (Date.now() > deadline) throw new Error('the triggered passes did not take every subject');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const triggered = [];
    for await (const execution of client.workflow.list({
      query: `WorkflowType = 'tenantConsolidationWorkflow' AND TaskQueue = '${consolidationTaskQueue(taskQueue)}'`,
    }))
      triggered.push(execution);
    expect(triggered).toHaveLength(1);
    expect((await passes()).taken.length).toBeLessThanOrEqual(3);
  });
});
