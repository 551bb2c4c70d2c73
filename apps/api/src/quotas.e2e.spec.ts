import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, changePolicy, chatEvent, dataEventCount, slowRequest, startTestApp, type Json, type TestApp } from './testing';

/**
 * Tenant quotas over real HTTP: set in the tenant policy, refused before any
 * work with a stable code per quota, Retry-After where a retry can succeed,
 * the same limits on GraphQL, and visible in /metrics.
 */
describe('tenant quotas', () => {
  let t: TestApp;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp();
    for (const tenant of ['acme', 'globex', 'initech', 'umbrella']) {
      tokens[`${tenant}:agent`] = await t.token({ tenant });
      tokens[`${tenant}:admin`] = await t.token({ tenant, sub: `admin-${tenant}`, roles: ['admin'] });
      // The platform role in a tenant's own token: its issuer could mint any role, so it grants nothing here.
      tokens[`${tenant}:self-styled`] = await t.token({ tenant, sub: `admin-${tenant}`, roles: ['admin', 'platform-admin'] });
    }
  });
  afterAll(async () => t?.close());

  const send = async (who: string, method: string, path: string, body?: unknown) => {
    const response = await callApi(t.url, tokens[who], method, path, body);
    return { ...response, retryAfter: response.headers.get('retry-after') };
  };

  const recall = (who: string, query = 'where are the pallets') =>
    send(who, 'POST', '/v1/recall', { query, purpose: 'support', budgetTokens: 200 });
  const setQuotas = (tenant: string, quotas: Json) =>
    changePolicy(t.url, tokens[`${tenant}:admin`], (policy) => {
      policy.quotas = quotas;
    });

  it('absurd quota values are refused with 422 and the policy stays as it was', async () => {
    for (const quotas of [
      { recall: { requestsPerSecond: 0, burst: 5 } },
      { ingest: { eventsPerSecond: 1e12, burst: 5 } },
      { storedMemories: -1 },
      { storedBytes: 10 },
      { concurrentRequests: 0 },
      { recall: { requestsPerSecond: 1 } },
      { egress: 5 },
    ]) {
      const { version, ...document } = (await send('umbrella:admin', 'GET', '/v1/policy')).body;
      const put = await send('umbrella:admin', 'PUT', `/v1/policy?expectedVersion=${version}`, { ...document, quotas });
      expect(put.status, JSON.stringify(quotas)).toBe(422);
      expect(put.body.code).toBe('REQUEST.VALIDATION_FAILED');
      expect(JSON.stringify(put.body.errors)).toContain('quotas');
    }
    expect((await send('umbrella:admin', 'GET', '/v1/policy')).body.quotas).toBeUndefined();
    await setQuotas('umbrella', { storedMemories: 1000 });
    expect((await send('umbrella:admin', 'GET', '/v1/policy')).body.quotas).toEqual({ storedMemories: 1000 });
    // The tenant's own admin cannot grant itself more than the platform gives.
    const { version, ...document } = (await send('umbrella:admin', 'GET', '/v1/policy')).body;
    const raise = await send('umbrella:admin', 'PUT', `/v1/policy?expectedVersion=${version}`, {
      ...document,
      quotas: { storedMemories: 1000, recall: { requestsPerSecond: 10_000, burst: 10 } },
    });
    expect(raise.status).toBe(403);
    expect(raise.body.code).toBe('QUOTA.RAISE_FORBIDDEN');
    expect(raise.body.detail).toContain('quotas.recall.requestsPerSecond');
    const selfStyled = await send('umbrella:self-styled', 'PUT', `/v1/policy?expectedVersion=${version}`, {
      ...document,
      quotas: { storedMemories: 1000, recall: { requestsPerSecond: 10_000, burst: 10 } },
    });
    expect(selfStyled.body.code).toBe('QUOTA.RAISE_FORBIDDEN');
    expect((await send('umbrella:admin', 'GET', '/v1/policy')).body.version).toBe(version);
    // A caller who may not change the policy at all is told that, not about quotas.
    expect(
      (await send('umbrella:agent', 'PUT', `/v1/policy?expectedVersion=${version}`, { ...document, quotas: { storedMemories: 1e9 } })).body
        .code,
    ).toBe('AUTH.FORBIDDEN');
  });

  it('recall over its rate gets 429 QUOTA.RECALL_RATE with Retry-After from the bucket; another tenant is untouched', async () => {
    // A token every 4 s, two at once.
    await setQuotas('acme', { recall: { requestsPerSecond: 0.25, burst: 2 } });
    expect((await recall('acme:agent')).status).toBe(200);
    expect((await recall('acme:agent')).status).toBe(200);
    const refused = await recall('acme:agent', 'a question only this caller sent');
    expect(refused.status).toBe(429);
    expect(refused.contentType).toContain('application/problem+json');
    expect(refused.body).toMatchObject({ code: 'QUOTA.RECALL_RATE', status: 429 });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(4);
    // Nothing of the tenant or the request in the answer.
    expect(refused.text).not.toContain('acme');
    expect(refused.text).not.toContain('only this caller');
    // The other tenant has its own bucket.
    for (let i = 0; i < 5; i++) expect((await recall('globex:agent')).status).toBe(200);
  });

  it('GraphQL recall spends the same bucket and is refused alike', async () => {
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens['acme:agent']}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ recall(input: { query: "pallets", purpose: "support" }) { recallId } }' }),
    });
    const body = (await response.json()) as Json;
    expect(body.errors[0].extensions).toMatchObject({ code: 'QUOTA.RECALL_RATE', status: 429 });
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(body)).not.toContain('acme');
  });

  it('an ingest batch over the event rate is refused whole with 429 QUOTA.INGEST_RATE, and takes no tokens', async () => {
    // Hardly any refill during the test: what the burst allows is exactly what passes.
    await setQuotas('globex', { ingest: { eventsPerSecond: 0.01, burst: 5 } });
    const batch = (n: number, tag: string) => ({ events: Array.from({ length: n }, (_, i) => chatEvent('cust-rate', `${tag} note ${i}`)) });

    const tooLarge = await send('globex:agent', 'POST', '/v1/events', batch(6, 'huge'));
    expect(tooLarge.status).toBe(422);
    expect(tooLarge.body.code).toBe('QUOTA.BATCH_EXCEEDS_BURST');
    expect(tooLarge.retryAfter).toBeNull();

    expect((await send('globex:agent', 'POST', '/v1/events', batch(4, 'first'))).status).toBe(202);
    const before = await dataEventCount(t.elma, 'globex');
    const over = await send('globex:agent', 'POST', '/v1/events', batch(3, 'second'));
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ code: 'QUOTA.INGEST_RATE', status: 429 });
    // Two tokens missing at 0.01 a second.
    expect(Number(over.retryAfter)).toBeGreaterThan(150);
    expect(Number(over.retryAfter)).toBeLessThanOrEqual(200);
    // Nothing of the refused batch (nor of the oversized one) was written.
    expect(await dataEventCount(t.elma, 'globex')).toBe(before);
    // The refusal took no token: the one left still admits one event.
    expect((await send('globex:agent', 'POST', '/v1/events', batch(1, 'third'))).status).toBe(202);
    expect((await send('globex:agent', 'POST', '/v1/events', batch(1, 'fourth'))).status).toBe(429);
  });

  it('a write past the stored-memories quota gets 429 QUOTA.STORED_MEMORIES without Retry-After, and writes nothing', async () => {
    await setQuotas('initech', { storedMemories: 3 });
    const first = await send('initech:agent', 'POST', '/v1/events', { events: [chatEvent('cust-s', 'one'), chatEvent('cust-s', 'two')] });
    expect(first.status).toBe(202);
    const before = await dataEventCount(t.elma, 'initech');
    const over = await send('initech:agent', 'POST', '/v1/events', { events: [chatEvent('cust-s', 'three'), chatEvent('cust-s', 'four')] });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ code: 'QUOTA.STORED_MEMORIES', status: 429 });
    expect(over.retryAfter).toBeNull();
    expect(over.text).not.toContain('initech');
    expect(await dataEventCount(t.elma, 'initech')).toBe(before);
    expect((await send('initech:agent', 'POST', '/v1/events', chatEvent('cust-s', 'three'))).status).toBe(202);
    expect((await send('initech:agent', 'POST', '/v1/events', chatEvent('cust-s', 'five'))).status).toBe(429);
    // GraphQL ingest meets the same quota.
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens['initech:agent']}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        query: 'mutation($e: [EventInput!]!) { ingestEvents(events: $e) { position } }',
        variables: { e: [chatEvent('cust-s', 'six')] },
      }),
    });
    const body = (await response.json()) as Json;
    expect(body.errors?.[0]?.extensions, JSON.stringify(body)).toMatchObject({ code: 'QUOTA.STORED_MEMORIES', status: 429 });
    // An explicit memory write counts against the same quota.
    const memory = await send('initech:agent', 'POST', '/v1/memories', {
      kind: 'semantic',
      content: { text: 'A summary written by the agent' },
      sourceEventIds: [first.body.events[0].id],
      purposes: ['support'],
      subject: 'cust-s',
    });
    expect(memory.status, memory.text).toBe(429);
    expect(memory.body.code).toBe('QUOTA.STORED_MEMORIES');
    // Raising the quota makes room at once.
    await setQuotas('initech', { storedMemories: 4 });
    expect((await send('initech:agent', 'POST', '/v1/events', chatEvent('cust-s', 'seven'))).status).toBe(202);
  });

  it('a write past the stored-bytes quota gets 429 QUOTA.STORED_BYTES without Retry-After', async () => {
    await setQuotas('umbrella', { storedBytes: 2048 });
    expect((await send('umbrella:agent', 'POST', '/v1/events', chatEvent('cust-b', 'short note'))).status).toBe(202);
    const big = await send('umbrella:agent', 'POST', '/v1/events', chatEvent('cust-b', '仓库'.repeat(400)));
    expect(big.status).toBe(429);
    expect(big.body.code).toBe('QUOTA.STORED_BYTES');
    expect(big.text).not.toContain('仓库');
  });

  it('requests over the concurrency quota get 429 QUOTA.CONCURRENT_REQUESTS at once; another tenant is untouched', async () => {
    await setQuotas('umbrella', { concurrentRequests: 2 });
    const slowRecall = () =>
      slowRequest(t.url, tokens['umbrella:agent'], '/v1/recall', { query: 'pallets', purpose: 'support', budgetTokens: 200 });
    const held = [slowRecall(), slowRecall()];
    await new Promise((r) => setTimeout(r, 300));
    const third = await recall('umbrella:agent');
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ code: 'QUOTA.CONCURRENT_REQUESTS', status: 429 });
    expect(third.retryAfter).toBe('1');
    // GraphQL requests count alike, and are refused in the GraphQL response format.
    const graphql = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens['umbrella:agent']}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ recall(input: { query: "pallets", purpose: "support" }) { recallId } }' }),
    });
    expect(graphql.status).toBe(429);
    expect(graphql.headers.get('retry-after')).toBe('1');
    expect(((await graphql.json()) as Json).errors[0].extensions).toMatchObject({ code: 'QUOTA.CONCURRENT_REQUESTS', status: 429 });
    expect((await recall('globex:agent')).status).toBe(200);
    expect((await Promise.all(held.map((h) => h.finish()))).map((r) => r.status)).toEqual([200, 200]);
    expect((await recall('umbrella:agent')).status).toBe(200);
  });

  it('/metrics shows refusals by tenant and quota, and usage, with no subject and no content', async () => {
    const response = await fetch(`${t.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    const value = (line: string) =>
      Number(new RegExp(`^${line.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+(?:\\.\\d+)?)$`, 'm').exec(text)?.[1]);
    expect(value('elma_quota_refusals_total{tenant="acme",quota="recall_rate"}')).toBeGreaterThanOrEqual(2);
    expect(value('elma_quota_refusals_total{tenant="globex",quota="ingest_rate"}')).toBe(2);
    expect(value('elma_quota_refusals_total{tenant="globex",quota="batch_exceeds_burst"}')).toBe(1);
    expect(value('elma_quota_refusals_total{tenant="initech",quota="stored_memories"}')).toBeGreaterThanOrEqual(4);
    expect(value('elma_quota_refusals_total{tenant="umbrella",quota="concurrent_requests"}')).toBe(2);
    expect(value('elma_quota_stored_memories{tenant="initech"}')).toBe(4);
    expect(value('elma_quota_limit{tenant="initech",quota="stored_memories"}')).toBe(4);
    expect(value('elma_quota_limit{tenant="acme",quota="recall_burst"}')).toBe(2);
    expect(value('elma_admission_shed_total{class="recall"}')).toBe(0);
    expect(text).toMatch(/^# TYPE elma_quota_refusals_total counter$/m);
    for (const personal of ['cust-', 'agent-1', 'admin-', 'pallets', '仓库']) expect(text).not.toContain(personal);
  });

  it('after a restart the stored count is taken from the index: the quota still holds', async () => {
    const dataDir = t.dataDir;
    await t.app.close();
    await t.elma.close();
    t = await startTestApp({ dataDir });
    // Counted in the background of the start, before any write: a tenant's first write does not wait for its count.
    const stored = async (tenant: string) => {
      const text = await (await fetch(`${t.url}/metrics`)).text();
      return Number(new RegExp(`^elma_quota_stored_memories\\{tenant="${tenant}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
    };
    await expect.poll(() => stored('initech'), { timeout: 10_000 }).toBe(4);
    await expect.poll(() => stored('globex'), { timeout: 10_000 }).toBeGreaterThan(0);
    expect((await send('initech:agent', 'POST', '/v1/events', chatEvent('cust-s', 'eight'))).status).toBe(429);
    expect((await send('globex:agent', 'POST', '/v1/events', chatEvent('cust-s', 'eight'))).status).toBe(202);
  });
});
