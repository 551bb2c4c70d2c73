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
  });
});
