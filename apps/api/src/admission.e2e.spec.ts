import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, chatEvent, slowRequest, startTestApp, type TestApp } from './testing';

/**
 * Overload over real HTTP: far more concurrent requests than the bounds let
 * in. The excess is refused at once with 503 + Retry-After instead of
 * queueing until clients time out; what is admitted is answered correctly.
 */
const QUEUE_WAIT_MS = 4_000;

describe('admission control under a flood of requests', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    // A queue wait far above an HTTP round trip on a busy machine, so "refused at once" (well under the wait) and
    // "shed after waiting in the queue" stay apart however loaded the machine that runs the suite is.
    t = await startTestApp({ env: { ELMA_MAX_INFLIGHT: '4', ELMA_MAX_QUEUE: '8', ELMA_MAX_QUEUE_WAIT_MS: String(QUEUE_WAIT_MS) } });
    token = await t.token();
    const ingest = await callApi(t.url, token, 'POST', '/v1/events', {
      events: [
        chatEvent('cust-flood', 'The Harwick depot ships pallets on Tuesdays'),
        chatEvent('cust-flood', 'Harwick invoices go to the finance desk'),
      ],
    });
    expect(ingest.status).toBe(202);
  });
  afterAll(async () => t?.close());

  const timed = async (call: () => ReturnType<typeof fetchWithHeaders>) => {
    const started = performance.now();
    const response = await call();
    return { ...response, ms: performance.now() - started };
  };
  const recall = (query: string) =>
    fetchWithHeaders(t.url, token, '/v1/recall', { query, purpose: 'support', consistency: 'strong', budgetTokens: 200 });
  // Requests whose bodies arrive slowly hold their slots (a slot is taken before the body is read): a
  // deterministic way to keep the recall class at its bound while the rest of the flood arrives.
  const holdRecallSlots = async (n: number) => {
    const held = Array.from({ length: n }, () =>
      slowRequest(t.url, token, '/v1/recall', { query: 'Harwick depot pallets', purpose: 'support', budgetTokens: 200 }),
    );
    await new Promise((r) => setTimeout(r, 300));
    return { finish: () => Promise.all(held.map((h) => h.finish())) };
  };

  it('sheds recalls beyond the bound at once with 503 SERVER.OVERLOADED and Retry-After, and answers the admitted ones', async () => {
    const held = await holdRecallSlots(4);
    const flood = await Promise.all(Array.from({ length: 60 }, () => timed(() => recall('Harwick depot pallets'))));
    const admitted = await held.finish();

    // Four in flight and eight queued (shed after the queue wait): the other 48 are refused at once.
    const shed = flood.filter((r) => r.status === 503);
    expect(shed.length).toBeGreaterThanOrEqual(48);
    expect(flood.filter((r) => r.ms < QUEUE_WAIT_MS / 2 && r.status === 503).length).toBeGreaterThanOrEqual(48);
    for (const r of shed) {
      expect(r.contentType).toContain('application/problem+json');
      expect(r.body).toMatchObject({ code: 'SERVER.OVERLOADED', status: 503 });
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // Nothing else: no 500, and whatever got a slot is answered correctly.
    for (const r of [...flood, ...admitted]) expect([200, 503]).toContain(r.status);
    expect(admitted.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    for (const r of [...flood, ...admitted].filter((x) => x.status === 200)) {
      expect(r.body.items.map((i: { text: string }) => i.text).join(' ')).toContain('Harwick depot');
    }
  });

  it('sheds GraphQL requests in the GraphQL response format, with the same code and Retry-After', async () => {
    const query = { query: '{ recall(input: {query: "Harwick depot", purpose: "support"}) { items { text } } }' };
    const held = Array.from({ length: 4 }, () => slowRequest(t.url, token, '/graphql', query));
    await new Promise((r) => setTimeout(r, 300));
    const flood = await Promise.all(Array.from({ length: 40 }, () => fetchWithHeaders(t.url, token, '/graphql', query)));
    await Promise.all(held.map((h) => h.finish()));
    const shed = flood.filter((r) => r.status === 503);
    expect(shed.length).toBeGreaterThanOrEqual(28);
    for (const r of shed) {
      expect(r.contentType).toContain('application/json');
      expect(r.body.data).toBeUndefined();
      expect(r.body.errors[0].extensions).toMatchObject({ code: 'SERVER.OVERLOADED', status: 503 });
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
  });

  it('keeps answering health while recalls are being shed', async () => {
    const held = await holdRecallSlots(4);
    const flood = Promise.all(Array.from({ length: 30 }, () => recall('Harwick invoices')));
    const health = await Promise.all(Array.from({ length: 10 }, () => fetch(`${t.url}/health`).then((r) => r.status)));
    expect((await flood).map((r) => r.status)).toContain(503);
    expect(health).toEqual(Array(10).fill(200));
    await held.finish();
  });

  it('bounds each class apart: ingest is admitted while recalls are shed', async () => {
    const held = await holdRecallSlots(4);
    const flood = Promise.all(Array.from({ length: 30 }, () => recall('Harwick')));
    const ingest = await callApi(t.url, token, 'POST', '/v1/events', chatEvent('cust-flood', 'Harwick asked for a callback on Friday'));
    expect(ingest.status).toBe(202);
    expect((await flood).map((r) => r.status)).toContain(503);
    await held.finish();
  });

  it('under mixed load every request is answered or shed, none fails, and read-your-writes holds', async () => {
    // Each client writes an event and then recalls it with read-your-writes, as agents do: the strong
    // recalls wait for the projection of everyone's writes.
    const clients = 200;
    const started = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: clients }, async (_, i) => {
        const own = await t.token({ sub: `agent-${i}` });
        // A reference word of its own: the check is read-your-writes, not how 200 near-identical notes rank.
        const reference = `ref${i}x${Math.random().toString(36).slice(2, 8)}`;
        const text = `Harwick depot note ${i} about pallet shipments, reference ${reference}`;
        const ingest = await fetchWithHeaders(t.url, own, '/v1/events', chatEvent(`cust-${i % 20}`, text));
        const found = await fetchWithHeaders(t.url, own, '/v1/recall', {
          query: reference,
          purpose: 'support',
          consistency: 'strong',
          budgetTokens: 400,
        });
        return { text, ingest, found };
      }),
    );
    for (const o of outcomes) {
      expect([202, 503]).toContain(o.ingest.status);
      expect([200, 503]).toContain(o.found.status);
      if (o.ingest.status === 202 && o.found.status === 200)
        expect(o.found.body.items.map((item: { text: string }) => item.text)).toContain(o.text);
    }
    expect(outcomes.filter((o) => o.found.status === 200).length).toBeGreaterThan(0);
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  it('frees its slots once the flood is over', async () => {
    const after = await Promise.all(
      Array.from({ length: 4 }, () =>
        callApi(t.url, token, 'POST', '/v1/recall', { query: 'Harwick depot', purpose: 'support', budgetTokens: 200 }),
      ),
    );
    expect(after.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  });
});

async function fetchWithHeaders(url: string, token: string, path: string, body: unknown) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text ? JSON.parse(text) : undefined,
    contentType: response.headers.get('content-type') ?? '',
    retryAfter: response.headers.get('retry-after'),
  };
}
