import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@elma/infra';
import { callApi, chatEvent, startTestApp, type TestApp } from './testing';

describe('/health and the embedder', () => {
  it('names the hashing embedder, up, without a server to reach', async () => {
    const t = await startTestApp();
    try {
      const health = await callApi(t.url, await t.token(), 'GET', '/health');
      expect(health.body.engines.embedder).toEqual({ engine: 'hashing', up: true, detail: { model: 'hashing-v1' } });
    } finally {
      await t.close();
    }
  });

  describe('with an embedding server that does not answer', () => {
    let t: TestApp;
    let token: string;
    beforeAll(async () => {
      // A loopback port nobody listens on: the embedding service is down.
      const url = `http://127.0.0.1:${await freePort()}`;
      t = await startTestApp({ env: { ELMA_EMBEDDER: 'openai-compatible', ELMA_EMBEDDING_URL: url, ELMA_EMBEDDING_MODEL: 'e5-small@v2' } });
      token = await t.token();
    });
    afterAll(() => t?.close());

    it('reports it unreachable, degraded rather than down, with the model and nothing else', async () => {
      const health = await callApi(t.url, token, 'GET', '/health');
      expect(health.body.engines.embedder).toEqual({
        engine: 'openai-compatible',
        up: true,
        degraded: true,
        detail: { model: 'e5-small@v2', reachable: false },
      });
    });

    it('still accepts ingest', async () => {
      const ingest = await callApi(t.url, token, 'POST', '/v1/events', chatEvent('cust-1', '王先生说交付风险很高。'));
      expect(ingest.status).toBe(202);
    });

    it('still answers recall, by BM25 alone', async () => {
      await callApi(t.url, token, 'POST', '/v1/events', chatEvent('cust-2', 'The Lyon depot closes early on Fridays.'));
      const recall = await callApi(t.url, token, 'POST', '/v1/recall', { query: 'Lyon depot', purpose: 'support', consistency: 'strong' });
      expect(recall.status).toBe(200);
      expect(recall.body.items.map((i: { text: string }) => i.text)).toContain('The Lyon depot closes early on Fridays.');
    });
  });

  describe('with an embedding server that accepts connections and never answers', () => {
    let t: TestApp;
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    beforeAll(async () => {
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as { port: number };
      t = await startTestApp({
        env: { ELMA_EMBEDDER: 'openai-compatible', ELMA_EMBEDDING_URL: `http://127.0.0.1:${port}`, ELMA_EMBEDDING_MODEL: 'e5-small@v2' },
      });
    });
    afterAll(async () => {
      await t?.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });

    it('answers recall by BM25 within seconds instead of waiting for the query vector', async () => {
      const token = await t.token();
      await callApi(t.url, token, 'POST', '/v1/events', chatEvent('cust-3', '王先生说交付风险很高。'));
      const started = Date.now();
      const recall = await callApi(t.url, token, 'POST', '/v1/recall', { query: '交付风险', purpose: 'support', consistency: 'strong' });
      expect(recall.status).toBe(200);
      expect(recall.body.items.map((i: { text: string }) => i.text)).toContain('王先生说交付风险很高。');
      expect(Date.now() - started).toBeLessThan(8_000);
    });

    it('shuts down without waiting out the hanging embedding request', async () => {
      const started = Date.now();
      const app = t;
      t = undefined!;
      await app.close();
      expect(Date.now() - started).toBeLessThan(10_000);
    });
  });
});
