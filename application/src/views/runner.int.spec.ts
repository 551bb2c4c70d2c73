import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { streams, type EventLog, type Principal, type Subscription } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { MAX_QUEUED, ProjectionRunner, VIEWS_CHECKPOINT } from './runner';
import type { Projection } from './projection';

const who: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };

const beta: Principal = { ...who, tenant: 'beta' };

const batch = (from: number, count: number) => ({
  events: Array.from({ length: count }, (_, i) => ({
    subject: `cust-${(from + i) % 7}`,
    occurredAt: new Date(Date.UTC(2026, 10, 1, 0, from + i)).toISOString(),
    activity: 'chat.turn',
    content: {
      text: `Event number ${from + i} about delivery 交付 ${from + i}`,
      ...((from + i) % 10 === 0 ? { fact: { entity: `order-${from + i}`, attribute: 'status', value: 'shipped' } } : {}),
    },
    source: { system: 'crm', externalId: `ext-${from + i}` },
    purposes: ['support'],
  })),
});

/** Memories expected from `n` events numbered 0..n-1: one episodic each, one semantic for every tenth. */
const expectedMemories = (n: number) => n + Math.ceil(n / 10);

describe('the projection runner', () => {
  const dirs: string[] = [];
  const open: Elma[] = [];
  const start = async (dataDir: string, run = true) => {
    const elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
    open.push(elma);
    if (run) await elma.runner.start();
    return elma;
  };
  const memoryEventCount = async (elma: Elma) => {
    let n = 0;
    for await (const _ of elma.log.readAll({ filter: { streamNamePrefix: [streams.memoriesOfTenant('acme')] } })) n++;
    return n;
  };
  afterEach(async () => {
    for (const elma of open.splice(0)) await elma.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('starts a consolidation only once the events that triggered it are in the index', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-runner-'));
    dirs.push(dir);
    const elma = await start(dir);
    const seen: Promise<boolean>[] = [];
    // The workflow the trigger starts looks the record up by id at once; a slower index must already show it.
    elma.projection.setConsolidationTrigger((tenant, ref) => seen.push(elma.index.get(tenant, ref).then(Boolean)), 3);

    const result = await elma.ingest.ingest(who, batch(0, 21));
    await elma.runner.waitFor(BigInt(result.position));

    expect(seen.length).toBeGreaterThan(0);
    expect(await Promise.all(seen)).toEqual(seen.map(() => true));
  });

  it('resumes from its durable checkpoint after a restart with no loss and no duplicates', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-runner-'));
    dirs.push(dir);

    // Given a projection that has applied 300 events and was stopped
    const first = await start(dir);
    const written = await first.ingest.ingest(who, batch(0, 300));
    await first.runner.waitFor(BigInt(written.position));
    await first.close();
    // What it had applied when it stopped (at least `written`: the audit entries of its own reads come after).
    const checkpoint = first.runner.checkpoint;
    expect(checkpoint).toBeGreaterThanOrEqual(BigInt(written.position));
    open.pop();

    // and 300 more events appended while it was down
    const offline = await start(dir, false);
    await offline.ingest.ingest(who, batch(300, 300));
    await offline.close();
    open.pop();

    // When it starts again
    const second = await start(dir);
    expect(await second.index.load(VIEWS_CHECKPOINT)).toBe(checkpoint);
    await second.runner.waitFor(await second.log.headPosition());

    // Then every event is projected exactly once, and nothing is appended for it: its memories' first
    // versions are derived from it, and these events call for no revision
    expect(await second.index.count('acme')).toBe(expectedMemories(600));
    expect(await memoryEventCount(second)).toBe(0);
  });

  it('replays from an older checkpoint (a crash between apply and save) without duplicating anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-runner-'));
    dirs.push(dir);
    const first = await start(dir);
    await first.ingest.ingest(who, batch(0, 200));
    await first.runner.waitFor(await first.log.headPosition());
    const before = { memories: await first.index.count('acme'), events: await memoryEventCount(first) };
    await first.close();
    open.pop();

    // Simulate the crash: the checkpoint is rolled back to the start of the log.
    const crashed = await start(dir, false);
    await crashed.index.save(VIEWS_CHECKPOINT, -1n);
    await crashed.close();
    open.pop();

    const second = await start(dir);
    await second.runner.waitFor(await second.log.headPosition());
    expect(before).toEqual({ memories: expectedMemories(200), events: 0 });
    expect(await second.index.count('acme')).toBe(before.memories);
    expect(await memoryEventCount(second)).toBe(before.events);
  });

  it('makes an ingested event searchable for a strong-consistency reader', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-runner-'));
    dirs.push(dir);
    const elma = await start(dir);
    await elma.ingest.ingest(who, {
      subject: 'cust-1',
      occurredAt: '2026-11-30T12:00:00Z',
      activity: 'chat.turn',
      content: { text: 'Quarterly forecast meeting moved to Thursday' },
      source: { system: 'crm' },
      purposes: ['support'],
    });
    const result = await elma.recall.recall(who, { query: 'forecast meeting', purpose: 'support', consistency: 'strong' });
    expect(result.items.map((i) => i.text)).toContain('Quarterly forecast meeting moved to Thursday');
  });

  it('passes over a tenant whose index file is corrupt while the others keep indexing; health names it and a rebuild brings it all back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-runner-'));
    dirs.push(dir);
    const first = await start(dir);
    await first.ingest.ingest(who, batch(0, 30));
    await first.ingest.ingest(beta, batch(0, 30));
    await first.runner.waitFor(await first.log.headPosition());
    await first.close();
    open.pop();

    // Given beta's index file overwritten at its header while the process was down,
    const fd = openSync(join(dir, 'index', 'tenant-beta.db'), 'r+');
    writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 0);
    closeSync(fd);

    // when both tenants write again,
    const elma = await start(dir);
    await elma.ingest.ingest(beta, batch(30, 20));
    const last = await elma.ingest.ingest(who, batch(30, 20));

    // then acme's events are indexed as if nothing happened,
    await elma.runner.waitFor(BigInt(last.position), 10_000);
    expect(await elma.index.count('acme')).toBe(expectedMemories(50));
    // health says the index is degraded and names beta, recall for beta answers a typed error,
    expect((await elma.health()).index).toMatchObject({ up: true, degraded: true, detail: { quarantinedTenants: ['beta'] } });
    await expect(elma.recall.recall(beta, { query: 'delivery', purpose: 'support' })).rejects.toMatchObject({
      code: 'INDEX.PARTITION_CORRUPT',
    });
    expect((await elma.recall.recall(who, { query: 'delivery', purpose: 'support' })).items.length).toBeGreaterThan(0);

    // and a rebuild of beta (drop without reading, replay of its log) brings back every memory and lifts the quarantine.
    await elma.views.drop('beta');
    expect(await elma.views.replay('beta')).toMatchObject({ memories: expectedMemories(50) });
    expect((await elma.health()).index).toEqual({ engine: 'sqlite', up: true });
    expect((await elma.recall.recall(beta, { query: 'delivery', purpose: 'support' })).items.length).toBeGreaterThan(0);
  });
  it('subscribes again after its subscription fails, and indexes what came after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-runner-'));
    dirs.push(dir);
    const elma = await start(dir, false);
    // The real log, whose first subscription breaks after five events as a lost connection would.
    let subscriptions = 0;
    const log: EventLog = Object.create(elma.log, {
      subscribeToAll: {
        value: (options: Parameters<EventLog['subscribeToAll']>[0]): Subscription => {
          const inner = elma.log.subscribeToAll(options);
          if (subscriptions++ > 0) return inner;
          return {
            unsubscribe: () => inner.unsubscribe(),
            async *[Symbol.asyncIterator]() {
              let delivered = 0;
              for await (const item of inner) {
                if (item.kind === 'event' && ++delivered > 5) throw new Error('connection lost');
                yield item;
              }
            },
          };
        },
      },
    });
    const runner = new ProjectionRunner({ log, checkpoints: elma.index, projection: elma.projection, logger: silentLogger });
    await runner.start();
    try {
      const first = await elma.ingest.ingest(who, batch(0, 10));
      const second = await elma.ingest.ingest(who, batch(10, 10));
      await runner.waitFor(BigInt(second.position), 20_000);
      expect(BigInt(first.position)).toBeLessThan(BigInt(second.position));
      expect(subscriptions).toBeGreaterThan(1);
      expect(await elma.index.count('acme')).toBe(expectedMemories(20));
      expect(runner.status().error).toBeUndefined();
    } finally {
      await runner.stop();
    }
  });

  it('reads at most MAX_QUEUED events ahead of what it applied, however long the backlog it starts behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-runner-'));
    dirs.push(dir);
    const elma = await start(dir, false);
    // Given a backlog of more than twice the bound, appended while no projection ran,
    const backlog = 2 * MAX_QUEUED + 500;
    for (let from = 0; from < backlog; from += 100) await elma.ingest.ingest(who, batch(from, 100));
    const head = await elma.log.headPosition();
    // when a runner starts behind it, over the real log and projection, counting what it read and applied,
    let delivered = 0;
    let applied = 0;
    let furthestAhead = 0;
    const log: EventLog = Object.create(elma.log, {
      subscribeToAll: {
        value: (options: Parameters<EventLog['subscribeToAll']>[0]): Subscription => {
          const inner = elma.log.subscribeToAll(options);
          return {
            unsubscribe: () => inner.unsubscribe(),
            async *[Symbol.asyncIterator]() {
              for await (const item of inner) {
                if (item.kind === 'event') delivered += 1;
                yield item;
              }
            },
          };
        },
      },
    });
    const projection: Projection = Object.create(elma.projection, {
      apply: {
        value: async (events: Parameters<Projection['apply']>[0]) => {
          furthestAhead = Math.max(furthestAhead, delivered - applied);
          applied += events.length;
          return elma.projection.apply(events);
        },
      },
    });
    const runner = new ProjectionRunner({ log, checkpoints: elma.index, projection, logger: silentLogger });
    await runner.start();
    try {
      await runner.waitFor(head, 60_000);
    } finally {
      await runner.stop();
    }
    // then it never held more than the bound in memory, and applied the whole backlog.
    expect(furthestAhead).toBeGreaterThan(0);
    expect(furthestAhead).toBeLessThanOrEqual(MAX_QUEUED);
    expect(await elma.index.count('acme')).toBe(expectedMemories(backlog));
  });
});
