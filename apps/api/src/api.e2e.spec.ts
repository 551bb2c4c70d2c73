import { countTokens } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { callApi, chatEvent, dataEventCount, e2eIndex, startTestApp, type TestApp } from './testing';

let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await startTestApp();
  token = await t.token();
});
afterAll(async () => t?.close());

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${t.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, type: response.headers.get('content-type') ?? '', body: text ? JSON.parse(text) : undefined };
}

const event = chatEvent;

/** What the tenant's data streams and index hold, once the projection has applied every write so far. */
async function counts() {
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
  return { events: await dataEventCount(t.elma, 'acme'), memories: await t.elma.index.count('acme') };
}

describe('the embedded API, end to end over HTTP', () => {
  it('reports each engine in /health', async () => {
    const health = await call('GET', '/health');
    expect(health.status).toBe(200);
    expect(Object.keys(health.body.engines)).toEqual(expect.arrayContaining(['eventLog', 'index', 'keyVault', 'projection']));
    expect(health.body.engines.eventLog.up).toBe(true);
    // The embedding lag: how many records wait for their vector (BM25 finds them meanwhile), and with which model.
    expect(health.body.engines.embeddings).toMatchObject({ up: true, detail: { model: expect.any(String), reindexNeeded: [] } });
    expect(health.body.engines.embeddings.detail.pending).toBeGreaterThanOrEqual(0);
  });

  // A partition quarantined as corrupt is the embedded index's own: Elasticsearch keeps no file of ELMA's to corrupt.
  it.runIf(e2eIndex === 'sqlite')(
    'answers a recall on a tenant whose index file is corrupt with 503 INDEX.PARTITION_CORRUPT, and /health names the tenant (embedded index only)',
    async () => {
      writeFileSync(join(t.dataDir, 'index', 'tenant-zeta.db'), Buffer.alloc(8192, 0x5a));
      const zeta = await t.token({ tenant: 'zeta' });
      try {
        const recall = await callApi(t.url, zeta, 'POST', '/v1/recall', { query: 'delivery', purpose: 'support' });
        expect(recall).toMatchObject({ status: 503, body: { code: 'INDEX.PARTITION_CORRUPT', status: 503 } });
        const health = await call('GET', '/health');
        expect(health.status).toBe(200);
        expect(health.body).toMatchObject({
          status: 'degraded',
          engines: { index: { up: true, degraded: true, detail: { quarantinedTenants: ['zeta'] } } },
        });
      } finally {
        await t.elma.index.dropTenant('zeta');
      }
    },
  );

  it('ingests Chinese and English and recalls each by a query in its own language', async () => {
    const ingest = await call('POST', '/v1/events', {
      events: [
        event('cust-1', '客户王先生说交付风险很高，希望下周确认发货日期。', {
          source: { system: 'crm', externalId: 'zh-1', channel: 'chat' },
        }),
        event('cust-2', 'The customer said the delivery risk is low and the contract renews in March.', {
          source: { system: 'crm', externalId: 'en-1', channel: 'chat' },
        }),
      ],
    });
    expect(ingest.status).toBe(202);
    expect(ingest.body.events).toHaveLength(2);

    const zh = await call('POST', '/v1/recall', { query: '交付风险', purpose: 'support', consistency: 'strong', budgetTokens: 200 });
    expect(zh.status).toBe(200);
    // Best first in `items`; the context puts the most important item last, nearest the question.
    expect(zh.body.items[0].text).toContain('交付风险');
    expect(zh.body.promptOrder.at(-1)).toBe(zh.body.items[0].id);
    expect(zh.body.items[0].citation.sourceEventIds).toHaveLength(1);

    const en = await call('POST', '/v1/recall', { query: 'contract renewal March', purpose: 'support', budgetTokens: 200 });
    expect(en.status).toBe(200);
    expect(en.body.items[0].text).toContain('contract renews in March');
    // Neither language drags in the other's unrelated memory just because it is a nearest neighbour.
    expect(zh.body.items.map((i: { text: string }) => i.text).join(' ')).not.toContain('contract renews');
    expect(en.body.items.map((i: { text: string }) => i.text).join(' ')).not.toContain('交付风险');
  });

  it('returns a numbered, cited context in prompt order and keeps to a tiny token budget', async () => {
    await call('POST', '/v1/events', {
      events: [event('cust-pk', 'The pallet order from Rotterdam ships on Monday.'), event('cust-pk', '托盘订单从鹿特丹发货，周一出发。')],
    });
    type Item = { id: string; text: string; tokens: number; citation: { sourceTrust: string } };
    const recall = await call('POST', '/v1/recall', {
      query: 'pallet order Rotterdam 托盘订单',
      purpose: 'support',
      consistency: 'strong',
      budgetTokens: 200,
    });
    expect(recall.status).toBe(200);
    const items: Item[] = recall.body.items;
    expect(items.length).toBeGreaterThanOrEqual(2);
    const byId = new Map(items.map((item) => [item.id, item]));
    let from = 0;
    (recall.body.promptOrder as string[])
      .map((id) => byId.get(id)!)
      .forEach((item, i) => {
        const at = recall.body.context.indexOf(`[${i + 1}] ${item.text}`, from);
        expect(at, `[${i + 1}] in order`).toBeGreaterThanOrEqual(from);
        from = at + 1;
        // Real o200k counts, Chinese and English alike.
        expect(item.tokens).toBe(countTokens(item.text));
        expect(item.citation.sourceTrust).toBe('user');
      });
    expect(recall.body.context).toContain('source user');
    expect(recall.body.usedTokens).toBe(items.reduce((sum, item) => sum + item.tokens, 0));
    expect(recall.body.contextTokens).toBeGreaterThan(recall.body.usedTokens);

    const tiny = await call('POST', '/v1/recall', { query: 'pallet order Rotterdam 托盘订单', purpose: 'support', budgetTokens: 20 });
    expect(tiny.status).toBe(200);
    expect(tiny.body.items.length).toBeGreaterThan(0);
    expect(tiny.body.usedTokens).toBe((tiny.body.items as Item[]).reduce((sum, item) => sum + item.tokens, 0));
    expect(tiny.body.usedTokens).toBeLessThanOrEqual(20);
    expect(tiny.body.budgetTokens).toBe(20);
    const first = (tiny.body.items as Item[]).find((item) => item.id === tiny.body.promptOrder[0])!;
    expect(tiny.body.context.startsWith(`[1] ${first.text}`)).toBe(true);
  });

  it('counts what recall returned and what the caller says it used, for this caller only', async () => {
    await call('POST', '/v1/events', event('cust-fb', 'Rotterdam depot closes at 17:00 on Fridays.'));
    const recall = await call('POST', '/v1/recall', {
      query: 'Rotterdam depot closes Fridays',
      purpose: 'support',
      consistency: 'strong',
      budgetTokens: 200,
    });
    expect(recall.body.recallId).toMatch(/^rcl_/);
    // Every memory of this suite happened on a Friday, so the date words bring them all back: pick the depot one.
    const used = (recall.body.items as { id: string; text: string }[]).find((i) => i.text.startsWith('Rotterdam depot'))!.id;

    expect((await call('POST', `/v1/recall/${recall.body.recallId}/feedback`, { adopted: ['mem_not_returned'] })).body.code).toBe(
      'REQUEST.VALIDATION_FAILED',
    );
    expect((await call('POST', '/v1/recall/rcl_unknown/feedback', { adopted: [used] })).status).toBe(404);
    const other = await t.token({ sub: 'agent-2' });
    const foreign = await fetch(`${t.url}/v1/recall/${recall.body.recallId}/feedback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other}`, 'content-type': 'application/json' },
      body: JSON.stringify({ adopted: [used] }),
    });
    expect(foreign.status).toBe(404);
    const fed = await call('POST', `/v1/recall/${recall.body.recallId}/feedback`, { adopted: [used] });
    expect(fed.status).toBe(200);
    expect(fed.body).toEqual({ adopted: 1 });

    const memory = await call('GET', `/v1/memories/${used}`);
    expect(memory.body.usage).toMatchObject({ retrieved: 1, adopted: 1 });
  });

  it('turns a structured fact into a semantic memory with provenance to its event', async () => {
    const ingest = await call(
      'POST',
      '/v1/events',
      event('cust-3', 'ACME moved its HQ to Berlin.', {
        content: { text: 'ACME moved its HQ to Berlin.', fact: { entity: 'ACME', attribute: 'headquarters', value: 'Berlin' } },
      }),
    );
    expect(ingest.status).toBe(202);
    const eventId = ingest.body.events[0].id;
    await call('POST', '/v1/recall', { query: 'x', purpose: 'support', consistency: 'strong' });
    const semantic = await call('GET', `/v1/memories/mem_se_${eventId}`);
    expect(semantic.status).toBe(200);
    expect(semantic.body.kind).toBe('semantic');
    expect(semantic.body.content.fact).toEqual({ entity: 'ACME', attribute: 'headquarters', value: 'Berlin' });
    expect(semantic.body.provenance.sourceEventIds).toEqual([eventId]);
    expect(semantic.body.status).toBe('active');
  });

  it('records an explicit memory that cites its source events', async () => {
    const ingest = await call('POST', '/v1/events', event('cust-4', 'Customer prefers email over phone.'));
    const eventId = ingest.body.events[0].id;
    const written = await call('POST', '/v1/memories', {
      kind: 'semantic',
      content: { text: 'Preferred channel: email', fact: { entity: 'cust-4', attribute: 'preferred_channel', value: 'email' } },
      sourceEventIds: [eventId],
    });
    expect(written.status).toBe(201);
    const read = await call('GET', `/v1/memories/${written.body.memory.id}`);
    expect(read.body.provenance).toMatchObject({ sourceEventIds: [eventId], parentIds: [`mem_ep_${eventId}`], rule: 'api.explicit' });
  });

  it('makes re-sending the same event a duplicate, not a second memory', async () => {
    const body = event('cust-5', 'Order 4711 was shipped.', { source: { system: 'erp', externalId: 'order-4711', channel: 'system' } });
    const first = await call('POST', '/v1/events', body);
    await call('POST', '/v1/recall', { query: 'x', purpose: 'support', consistency: 'strong' });
    const before = await counts();
    const second = await call('POST', '/v1/events', body);
    expect(second.status).toBe(202);
    expect(second.body.events[0]).toEqual({ ...first.body.events[0], duplicate: true });
    await call('POST', '/v1/recall', { query: 'x', purpose: 'support', consistency: 'strong' });
    expect(await counts()).toEqual(before);
  });

  it('rejects a batch with one bad event whole, naming the failing path, and writes nothing', async () => {
    const before = await counts();
    const events = [event('cust-6', 'fine one'), event('cust-6', 'fine two'), { ...event('cust-6', 'bad'), occurredAt: 'yesterday' }];
    const response = await call('POST', '/v1/events', { events });
    expect(response.status).toBe(422);
    expect(response.type).toContain('application/problem+json');
    expect(response.body.code).toBe('REQUEST.VALIDATION_FAILED');
    expect(response.body.errors.map((e: { path: string }) => e.path)).toContain('events.2.occurredAt');
    expect(JSON.stringify(response.body)).not.toContain('fine one');
    expect(await counts()).toEqual(before);
  });

  it('rejects a batch over 1,000 events', async () => {
    const before = await counts();
    const response = await call('POST', '/v1/events', { events: Array.from({ length: 1001 }, (_, i) => event('c', `e${i}`)) });
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('REQUEST.VALIDATION_FAILED');
    expect(await counts()).toEqual(before);
  });

  it('answers malformed JSON with 400 problem+json', async () => {
    const before = await counts();
    const response = await call('POST', '/v1/events', '{"subject": "x",');
    expect(response.status).toBe(400);
    expect(response.type).toContain('application/problem+json');
    expect(response.body.code).toBe('REQUEST.MALFORMED_JSON');
    expect(await counts()).toEqual(before);
  });

  it('answers a payload over 1 MiB with 413', async () => {
    const before = await counts();
    const response = await call('POST', '/v1/events', event('c', 'x'.repeat(1024 * 1024 + 10)));
    expect(response.status).toBe(413);
    expect(response.body.code).toBe('REQUEST.PAYLOAD_TOO_LARGE');
    expect(await counts()).toEqual(before);
  });

  it('answers a missing or bad token with 401 and writes nothing', async () => {
    const before = await counts();
    const missing = await call('POST', '/v1/events', event('c', 'x'), { authorization: '' });
    expect(missing.status).toBe(401);
    expect(missing.body.code).toBe('AUTH.UNAUTHENTICATED');
    const forged = await call('POST', '/v1/events', event('c', 'x'), { authorization: `Bearer ${token.slice(0, -3)}abc` });
    expect(forged.status).toBe(401);
    expect(await counts()).toEqual(before);
  });

  it('answers an unknown memory id with 404', async () => {
    const response = await call('GET', '/v1/memories/mem_does_not_exist');
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('MEMORY.NOT_FOUND');
  });

  it('answers a wrong expected version with 409 and writes nothing', async () => {
    const ingest = await call('POST', '/v1/events', event('cust-7', 'Budget approved by the CFO.'));
    const body = {
      content: { text: 'Budget approved' },
      sourceEventIds: [ingest.body.events[0].id],
      idempotencyKey: 'budget-approval',
      expectedVersion: 0,
    };
    expect((await call('POST', '/v1/memories', body)).status).toBe(201);
    const before = await counts();
    const again = await call('POST', '/v1/memories', { ...body, content: { text: 'Budget rejected' } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('EVENT_LOG.WRONG_EXPECTED_VERSION');
    expect(await counts()).toEqual(before);
  });

  it('answers a read-your-writes position no write has reached with 422 at once, not a 503 after the wait', async () => {
    const started = Date.now();
    const ahead = await call('POST', '/v1/recall', { query: 'x', purpose: 'support', consistency: 'strong', afterPosition: '99999999999' });
    expect(ahead.status).toBe(422);
    expect(ahead.body.code).toBe('CONSISTENCY.POSITION_NOT_WRITTEN');
    expect(Date.now() - started).toBeLessThan(5_000);
    // A position a write did return is still waited for and answered.
    const written = await call('POST', '/v1/events', event('cust-7', 'The Lyon office opens at eight.'));
    const recall = await call('POST', '/v1/recall', {
      query: 'Lyon office',
      purpose: 'support',
      consistency: 'strong',
      afterPosition: written.body.position,
    });
    expect(recall.status).toBe(200);
    expect(recall.body.items.map((i: { text: string }) => i.text).join(' ')).toContain('Lyon office opens');
  });

  it('refuses recall for a purpose the token does not carry', async () => {
    const response = await call('POST', '/v1/recall', { query: 'risk', purpose: 'performance_review' });
    expect(response.status).toBe(403);
    expect(response.body.code).toBe('RECALL.PURPOSE_NOT_PERMITTED');
  });

  it('never shows another tenant’s memories', async () => {
    const other = await t.token({ tenant: 'globex' });
    const response = await fetch(`${t.url}/v1/recall`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '交付风险 delivery risk contract', purpose: 'support' }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { items: unknown[] }).items).toEqual([]);
  });

  it('serves the same operations over GraphQL', async () => {
    const mutation = await call('POST', '/graphql', {
      query: `mutation($events: [EventInput!]!) { ingestEvents(events: $events) { events { id duplicate } position } }`,
      variables: { events: [event('cust-8', '合同续约需要法务部门审批。')] },
    });
    expect(mutation.body.errors).toBeUndefined();
    const id = mutation.body.data.ingestEvents.events[0].id;
    const recall = await call('POST', '/graphql', {
      query: `query($input: RecallInput!) { recall(input: $input) { items { id rank text citation { sourceEventIds sourceTrust } } promptOrder context usedTokens contextTokens budgetTokens } }`,
      variables: { input: { query: '法务审批', purpose: 'support', consistency: 'strong' } },
    });
    expect(recall.body.errors).toBeUndefined();
    expect(recall.body.data.recall.items[0]).toMatchObject({ rank: 1, citation: { sourceEventIds: [id], sourceTrust: 'user' } });
    expect(recall.body.data.recall.promptOrder.at(-1)).toBe(recall.body.data.recall.items[0].id);
    expect(recall.body.data.recall.context).toContain(`[${recall.body.data.recall.items.length}] 合同续约需要法务部门审批。`);
    expect(recall.body.data.recall.usedTokens).toBeLessThanOrEqual(recall.body.data.recall.budgetTokens);
    const memory = await call('POST', '/graphql', { query: `{ memory(id: "mem_ep_${id}") { kind provenance { sourceEventIds } } }` });
    expect(memory.body.data.memory).toEqual({ kind: 'episodic', provenance: { sourceEventIds: [id] } });
    const unauthenticated = await call('POST', '/graphql', { query: '{ memory(id: "x") { id } }' }, { authorization: '' });
    expect(unauthenticated.body.errors[0].extensions.code).toBe('AUTH.UNAUTHENTICATED');
  });

  it('publishes OpenAPI at /docs', async () => {
    const spec = await call('GET', '/docs/openapi.json');
    expect(spec.status).toBe(200);
    expect(Object.keys(spec.body.paths)).toEqual(
      expect.arrayContaining(['/v1/events', '/v1/memories', '/v1/memories/{id}', '/v1/recall', '/health']),
    );
  });

  it('keeps content out of the event log file (encrypted at rest)', async () => {
    const { readFileSync, readdirSync } = await import('node:fs');
    const marker = 'Zanzibar-marker-7731';
    await call('POST', '/v1/events', event('cust-9', `The secret project is called ${marker}.`));
    await call('POST', '/v1/recall', { query: 'x', purpose: 'support', consistency: 'strong' });
    for (const file of readdirSync(t.dataDir).filter((f) => f.startsWith('events.db') || f.startsWith('keys.db'))) {
      expect(readFileSync(`${t.dataDir}/${file}`).includes(Buffer.from(marker)), file).toBe(false);
    }
  });
});
