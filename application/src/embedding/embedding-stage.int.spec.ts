import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RECALLABLE_STATUSES, type HybridQuery, type LineageEntry, type Principal } from '@elma/domain';
import { HashingEmbedder, loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';

const who: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };
const hashing = new HashingEmbedder();

/**
 * A real OpenAI-compatible embedding server over HTTP, answering with the
 * hashing embedder's vectors, that a test can hold (requests wait), break
 * (HTTP 503) or heal.
 */
class EmbeddingServer {
  mode: 'up' | 'down' | 'hold' = 'up';
  requests = 0;
  private held: (() => void)[] = [];
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.answer(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Lets the held requests through (answered as the mode then says). */
  release(): void {
    const held = this.held;
    this.held = [];
    for (const go of held) go();
  }

  async waitForHeld(): Promise<void> {
    while (this.held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  async stop(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    this.requests += 1;
    if (this.mode === 'hold') await new Promise<void>((resolve) => this.held.push(resolve));
    if (this.mode === 'down') {
      res.writeHead(503).end();
      return;
    }
    const { input } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input: string[] };
    const data = input.map((text, index) => ({ index, embedding: Array.from(hashing.embedOne(text)) }));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data }));
  }
}

const event = (i: number, text: string) => ({
  subject: `cust-${i % 2}`,
  occurredAt: new Date(Date.UTC(2026, 10, 1, 0, i)).toISOString(),
  activity: 'chat.turn',
  content: { text },
  source: { system: 'crm', externalId: `ext-${i}` },
  purposes: ['support'],
});

const TEXTS = ['The parcel to Lyon is delayed by the storm', '客户更喜欢用邮件联系，不要打电话'];

describe('the embedding stage beside the projection', () => {
  let elma: Elma | undefined;
  let server: EmbeddingServer | undefined;
  const dirs: string[] = [];

  afterEach(async () => {
    server?.release();
    await elma?.close();
    await server?.stop();
    elma = undefined;
    server = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const open = async (dir: string, env: Record<string, string> = {}) =>
    openElma(loadConfig({ ELMA_DATA_DIR: dir, ...env }), { logger: silentLogger });
  const served = (model: string) => ({
    ELMA_EMBEDDER: 'openai-compatible',
    ELMA_EMBEDDING_URL: server!.url,
    ELMA_EMBEDDING_MODEL: model,
    ELMA_EMBEDDING_DIMENSIONS: '384',
  });
  const filter = () => ({ statuses: RECALLABLE_STATUSES, maxSensitivity: 'restricted' as const, now: new Date().toISOString() });
  const bm25 = (text: string): HybridQuery => ({ tenant: 'acme', text, limit: 10, filter: filter() });
  const dense = (text: string): HybridQuery => ({ tenant: 'acme', text: '', vector: hashing.embedOne(text), limit: 10, filter: filter() });
  const texts = async (q: HybridQuery) => (await elma!.index.search(q)).map((h) => h.record.content.text);
  const ingest = async (from: number, list: string[]) => {
    const result = await elma!.ingest.ingest(who, { events: list.map((text, i) => event(from + i, text)) });
    await elma!.runner.waitFor(BigInt(result.position));
  };

  it('makes a write BM25-findable without waiting for the embedder, and dense-findable once the stage embedded it', async () => {
    server = new EmbeddingServer();
    await server.start();
    const dir = mkdtempSync(join(tmpdir(), 'elma-embedding-'));
    dirs.push(dir);
    elma = await open(dir, served('served-hashing@1'));
    await elma.runner.start();
    server.mode = 'hold';

    // The projection applies the batch while the embedder holds every request.
    await ingest(0, TEXTS);
    await server.waitForHeld();
    expect(await texts(bm25('parcel Lyon delayed'))).toEqual([TEXTS[0]]);
    expect(await texts(bm25('邮件'))).toEqual([TEXTS[1]]);
    expect(await texts(dense(TEXTS[0]))).toEqual([]);
    const lag = (await elma.health()).embeddings;
    expect(lag.up).toBe(true);
    expect(lag.detail).toMatchObject({ model: 'served-hashing@1', pending: 2, reindexNeeded: [] });
    expect(typeof lag.detail!.oldestPendingAgeMs).toBe('number');

    server.mode = 'up';
    server.release();
    await elma.embeddings.waitForEmbedded('acme', 10_000);
    expect((await texts(dense(TEXTS[0])))[0]).toBe(TEXTS[0]);
    expect((await texts(dense(TEXTS[1])))[0]).toBe(TEXTS[1]);
    expect((await elma.health()).embeddings.detail).toMatchObject({ pending: 0, embedded: 2, failures: 0 });
    const lineage: LineageEntry[] = [];
    for await (const entry of elma.index.lineage('acme')) lineage.push(entry);
    expect(lineage.map((e) => e.vectorModel)).toEqual(['served-hashing@1', 'served-hashing@1']);
  });

  it('keeps answering by BM25 while the embedder is down, shows the lag growing in /health, and catches up when it is back', async () => {
    server = new EmbeddingServer();
    await server.start();
    server.mode = 'down';
    const dir = mkdtempSync(join(tmpdir(), 'elma-embedding-'));
    dirs.push(dir);
    elma = await open(dir, served('served-hashing@1'));
    await elma.runner.start();

    await ingest(0, TEXTS);
    await ingest(10, ['A third note about the Lyon warehouse']);
    expect(await texts(bm25('Lyon'))).toHaveLength(2);
    for (let i = 0; i < 200 && elma.embeddings.status().failures < 2; i++) await new Promise((r) => setTimeout(r, 50));
    const health = (await elma.health()).embeddings;
    expect(health).toMatchObject({ up: true, degraded: true });
    expect(health.detail).toMatchObject({ pending: 3, embedded: 0 });
    expect(health.detail!.failures).toBeGreaterThanOrEqual(2);
    // The error's class or code only: nothing of the texts.
    expect(JSON.stringify(health)).not.toContain('Lyon');

    server.mode = 'up';
    await elma.embeddings.waitForEmbedded('acme', 70_000);
    expect((await texts(dense(TEXTS[0])))[0]).toBe(TEXTS[0]);
    expect((await elma.health()).embeddings).toMatchObject({ up: true, detail: { pending: 0, failures: 0 } });
    expect((await elma.health()).embeddings.degraded).toBeUndefined();
  }, 90_000);

  it('never gives a record purged while its embedding was in flight its vector back', async () => {
    server = new EmbeddingServer();
    await server.start();
    const dir = mkdtempSync(join(tmpdir(), 'elma-embedding-'));
    dirs.push(dir);
    elma = await open(dir, served('served-hashing@1'));
    await elma.runner.start();
    server.mode = 'hold';

    await ingest(0, TEXTS);
    await server.waitForHeld();
    const [victim] = await elma.index.search(bm25('parcel Lyon'));
    await elma.index.purge('acme', [victim.record.id]);
    server.mode = 'up';
    server.release();
    await elma.embeddings.waitForEmbedded('acme', 10_000);

    expect(await elma.index.get('acme', victim.record.id)).toBeUndefined();
    expect(await texts(dense(TEXTS[0]))).not.toContain(TEXTS[0]);
    expect((await texts(dense(TEXTS[1])))[0]).toBe(TEXTS[1]);
    expect(await elma.index.count('acme')).toBe(1);
  });

  it('after a model change, searches none of the old vectors until a rebuild re-embeds every record with the new model', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-embedding-'));
    dirs.push(dir);
    // Model A: the hashing embedder, in process.
    elma = await open(dir);
    await elma.runner.start();
    await ingest(0, TEXTS);
    await elma.embeddings.waitForEmbedded('acme', 10_000);
    expect((await texts(dense(TEXTS[0])))[0]).toBe(TEXTS[0]);
    await elma.close();

    // Model B: another model name (same vector length), served over HTTP.
    server = new EmbeddingServer();
    await server.start();
    elma = await open(dir, served('model-b@2'));
    await elma.runner.start();
    expect(await texts(dense(TEXTS[0]))).toEqual([]);
    expect(await texts(bm25('parcel Lyon'))).toEqual([TEXTS[0]]);
    const stale = (await elma.health()).embeddings;
    expect(stale).toMatchObject({ up: true, degraded: true, detail: { reindexNeeded: ['acme'] } });
    // Nothing is re-embedded in place: the partition waits for its rebuild.
    await elma.embeddings.waitForEmbedded('acme', 10_000);
    expect(server.requests).toBe(0);

    // What ReindexWorkflow does on the embedded index: drop, then replay the tenant's log.
    await elma.views.drop('acme');
    await elma.views.replay('acme');
    expect(await texts(bm25('parcel Lyon'))).toEqual([TEXTS[0]]);
    await elma.embeddings.waitForEmbedded('acme', 10_000);
    expect((await texts(dense(TEXTS[0])))[0]).toBe(TEXTS[0]);
    expect((await texts(dense(TEXTS[1])))[0]).toBe(TEXTS[1]);
    expect((await elma.health()).embeddings).toMatchObject({ detail: { pending: 0, reindexNeeded: [] } });
    const lineage: LineageEntry[] = [];
    for await (const entry of elma.index.lineage('acme')) lineage.push(entry);
    expect(lineage.map((e) => e.vectorModel)).toEqual(['model-b@2', 'model-b@2']);
  });
});
