import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SqliteEventLog, freePort, loadConfig, mintToken } from '@elma/infra';
import { eventIdKeyOf, eventIdOf } from '@elma/shared';
import { fillVolume, mountSmallVolume, smallVolumesUnsupported } from '../../../tests/faults/small-volume';
import { prng, sentence } from './bench/corpus';

const main = join(import.meta.dirname, 'main.ts');

const random = prng(11);
/** A batch of `size` chat events of about 1.5 KB each (ordinary words, so no secret detector objects). */
const batch = (label: string, size: number) => ({
  events: Array.from({ length: size }, (_, i) => ({
    subject: `cust-${i % 7}`,
    occurredAt: '2026-11-20T10:00:00Z',
    activity: 'chat.turn',
    content: { text: `${label} ${Array.from({ length: 20 }, () => sentence(random, false)).join(' ')}` },
    source: { system: 'faults', externalId: `${label}-${i}`, channel: 'chat' },
    purposes: ['support'],
    // Given, so that the test knows each event's id (derived from it) even for a refused batch.
    idempotencyKey: `${label}-${i}`,
  })),
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `elma start` as an operator runs it, its data folder on a small volume of
 * its own and the index folder on another, both filled up by a filler file
 * while clients keep calling: the process must stay up, answer 507
 * STORAGE.FULL where a write cannot be stored, say so in /health, and carry
 * on by itself once the filler is deleted, with every acknowledged event kept.
 */
const unsupported = smallVolumesUnsupported('a full disk under a running ELMA');

describe.skipIf(unsupported !== undefined)('a full disk under a running ELMA', () => {
  const base = mkdtempSync(join(tmpdir(), 'elma-full-disk-'));
  const dataDir = join(base, 'data');
  const indexDir = join(dataDir, 'index');
  const unmounts: (() => void)[] = [];
  let child: ChildProcess;
  let output = '';
  let api = '';
  let token = '';
  let eventIdKey: Uint8Array;
  /** Ids of every event the API acknowledged (202), and the batches it refused. */
  const acknowledged = new Set<string>();
  const refused: string[][] = [];

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, contentType: response.headers.get('content-type') ?? '', body: text ? JSON.parse(text) : undefined };
  };
  const ingest = async (label: string, size: number) => {
    const request = batch(label, size);
    const response = await call('POST', '/v1/events', request);
    if (response.status === 202) for (const event of response.body.events as { id: string }[]) acknowledged.add(event.id);
    else refused.push(request.events.map((e) => eventIdOf(eventIdKey, 'acme', e.idempotencyKey)));
    return response;
  };
  const health = async () =>
    (await call('GET', '/health')).body as {
      status: string;
      engines: Record<
        string,
        { up: boolean; detail: { error?: string; volumes: Record<string, { freeBytes: number; lowWaterBytes: number }> } }
      >;
    };
  const alive = () => child.exitCode === null && child.signalCode === null;

  beforeAll(async () => {
    for (const [dir, megabytes] of [
      [dataDir, 48],
      [indexDir, 12],
    ] as const) {
      const mounted = mountSmallVolume(dir, megabytes);
      if ('reason' in mounted) throw new Error(mounted.reason);
      unmounts.push(mounted.unmount);
    }
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ELMA_DATA_DIR: dataDir,
      ELMA_PORT: String(port),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: `elma-full-disk-${port}`,
      ELMA_LOG_LEVEL: 'warn',
    };
    child = spawn(process.execPath, ['--import', 'tsx', main, 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const deadline = Date.now() + 90_000;
    while (!output.includes('Press Ctrl-C to stop.')) {
      if (!alive()) throw new Error(`elma start exited early:\n${output}`);
      if (Date.now() > deadline) throw new Error(`elma start did not come up:\n${output}`);
      await sleep(200);
    }
    const config = loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir });
    eventIdKey = eventIdKeyOf(config.masterKey);
    token = await mintToken(config.jwtSecret, {
      tenant: 'acme',
      sub: 'agent-1',
      roles: ['agent'],
      purposes: ['support'],
      clearance: 'internal',
    });
  }, 120_000);

  afterAll(async () => {
    if (child && alive()) child.kill('SIGKILL');
    await sleep(200);
    for (const unmount of unmounts.reverse()) unmount();
    rmSync(base, { recursive: true, force: true });
  });

  it('keeps serving, and catches the index up by itself, while the index volume is full', async () => {
    const before = await ingest('before', 20);
    expect(before.status).toBe(202);
    // Projected before the volume fills, so that what follows meets a full disk, not a half-opened index.
    expect(
      (
        await call('POST', '/v1/recall', {
          query: 'before',
          purpose: 'support',
          consistency: 'strong',
          afterPosition: before.body.position,
        })
      ).status,
    ).toBe(200);
    const filler = fillVolume(indexDir);

    // Recalls append audit entries, which the projection skips but checkpoints past: on a full index volume
    // that checkpoint cannot be written, and the process used to die of it.
    for (let i = 0; i < 5; i++) {
      const recall = await call('POST', '/v1/recall', { query: 'customer delivery', purpose: 'support' });
      expect(recall.status, `${JSON.stringify(recall.body)}\n${output}`).toBe(200);
      await sleep(500);
    }
    const during = await ingest('during', 20);
    expect(during.status).toBe(202);
    // Read-your-writes cannot be served while the index cannot take the write: after its wait, the cause.
    const strong = await call('POST', '/v1/recall', {
      query: 'during',
      purpose: 'support',
      consistency: 'strong',
      afterPosition: during.body.position,
    });
    expect(strong.status).toBe(507);
    expect(strong.body.code).toBe('STORAGE.FULL');
    expect(alive(), output).toBe(true);
    const down = await health();
    expect(down.status).toBe('down');
    expect(down.engines.projection).toMatchObject({ up: false, detail: { error: 'STORAGE.FULL' } });
    expect(down.engines.storage.up).toBe(false);
    expect(down.engines.storage.detail.volumes.index.freeBytes).toBeLessThan(down.engines.storage.detail.volumes.index.lowWaterBytes);

    rmSync(filler);
    const deadline = Date.now() + 30_000;
    while ((await health()).status !== 'up' && Date.now() < deadline) await sleep(250);
    expect((await health()).status).toBe('up');
    const recall = await call('POST', '/v1/recall', {
      query: 'during',
      purpose: 'support',
      consistency: 'strong',
      afterPosition: during.body.position,
    });
    expect(recall.status).toBe(200);
    expect(recall.body.items.length).toBeGreaterThan(0);
  });

  it('answers 507 STORAGE.FULL on REST and GraphQL while the data volume is full, never a 500, and resumes without a restart', async () => {
    const filler = fillVolume(dataDir);

    // A full volume can still take a write that fits in space SQLite already holds (a reused WAL),
    // so a few attempts may be acknowledged before one is refused; each is all or nothing.
    let full: Awaited<ReturnType<typeof call>> | undefined;
    for (let attempt = 0; attempt < 10 && !full; attempt++) {
      const response = await ingest(`full-${attempt}`, 200);
      expect([202, 507]).toContain(response.status);
      if (response.status === 507) full = response;
    }
    expect(full, 'no ingest was refused on a full volume').toBeDefined();
    expect(full!.contentType).toContain('application/problem+json');
    expect(full!.body).toMatchObject({ status: 507, code: 'STORAGE.FULL' });

    const graphql = await call('POST', '/graphql', {
      query: `mutation($events: [EventInput!]!) { ingestEvents(events: $events) { events { id } } }`,
      variables: batch('graphql-full', 200),
    });
    expect(graphql.status).toBe(200);
    expect(graphql.body.errors?.[0]?.extensions).toMatchObject({ code: 'STORAGE.FULL', status: 507 });

    // Other writers go through the same mapping. Small writes may still fit in space SQLite holds already,
    // so each either succeeds or is refused with the code; none is a 500.
    const legal = await mintToken(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }).jwtSecret, {
      tenant: 'acme',
      sub: 'counsel-1',
      roles: ['legal'],
      purposes: ['support'],
      clearance: 'restricted',
    });
    const hold = await fetch(`${api}/v1/legal-holds`, {
      method: 'POST',
      headers: { authorization: `Bearer ${legal}`, 'content-type': 'application/json' },
      body: JSON.stringify({ scope: { subjects: ['cust-1'] }, reason: 'matter 7' }),
    });
    expect([201, 507]).toContain(hold.status);
    if (hold.status === 507) expect(((await hold.json()) as { code: string }).code).toBe('STORAGE.FULL');

    // Recall writes an audit entry: it answers, or refuses cleanly with the same code.
    const recall = await call('POST', '/v1/recall', { query: 'customer delivery', purpose: 'support' });
    expect([200, 507]).toContain(recall.status);
    if (recall.status === 507) expect(recall.body.code).toBe('STORAGE.FULL');

    await sleep(1_500);
    expect(alive(), output).toBe(true);
    const down = await health();
    expect(down.engines.storage).toMatchObject({ up: false });
    expect(down.engines.storage.detail.volumes.data.freeBytes).toBeLessThan(down.engines.storage.detail.volumes.data.lowWaterBytes);

    rmSync(filler);
    const after = await ingest('after', 20);
    expect(after.status).toBe(202);
    const recalled = await call('POST', '/v1/recall', {
      query: 'after',
      purpose: 'support',
      consistency: 'strong',
      afterPosition: after.body.position,
    });
    expect(recalled.status, `${JSON.stringify(recalled.body)}\n${JSON.stringify(await health())}\n${output}`).toBe(200);
    const deadline = Date.now() + 30_000;
    while ((await health()).status !== 'up' && Date.now() < deadline) await sleep(250);
    expect((await health()).status).toBe('up');
    expect(alive()).toBe(true);
  });

  it('kept every acknowledged event, and each refused batch whole or not at all', async () => {
    child.kill('SIGINT');
    const deadline = Date.now() + 30_000;
    while (alive() && Date.now() < deadline) await sleep(100);
    expect(child.exitCode, output).toBe(0);

    const log = SqliteEventLog.open(join(dataDir, 'events.db'));
    const stored = new Set<string>();
    try {
      for await (const event of log.readAll({ filter: { streamNamePrefix: ['events-acme-'] } })) stored.add(event.id);
    } finally {
      await log.close();
    }
    expect(acknowledged.size).toBeGreaterThan(0);
    for (const id of acknowledged) expect(stored.has(id), `acknowledged event ${id} is missing`).toBe(true);
    expect(refused.length).toBeGreaterThan(0);
    for (const ids of refused) expect([0, ids.length]).toContain(ids.filter((id) => stored.has(id)).length);
  });
});
