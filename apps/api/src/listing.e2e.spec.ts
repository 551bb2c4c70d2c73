import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { callApi, chatEvent, startTestApp, type Json, type TestApp, settleErasure } from './testing';

/**
 * Listings over HTTP: a caller's memories page by page, a memory's versions,
 * and the erasures a caller may follow. Each answers exactly what reads by id
 * would (the same policy, holds, sessions and tenant), a hidden record never
 * takes a place in a page, and a cursor works only for the listing it came from.
 */
let t: TestApp;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

async function ingest(who: string, events: unknown[]): Promise<string[]> {
  const response = await call(who, 'POST', '/v1/events', { events });
  expect(response.status, response.text).toBe(202);
  await strong();
  return (response.body.events as { id: string }[]).map((e) => e.id);
}

async function write(body: Record<string, unknown>, who = 'agent'): Promise<Json> {
  const response = await call(who, 'POST', '/v1/memories', { purposes: ['support'], ...body });
  expect(response.status, response.text).toBe(201);
  await strong();
  return response.body.memory;
}

/** Every page of a listing as `who` reads it, following `nextCursor`; each page's items. */
async function pages(who: string, path: string): Promise<Json[][]> {
  const out: Json[][] = [];
  let cursor: string | null = null;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const response = await call(who, 'GET', cursor === null ? path : `${path}${separator}cursor=${encodeURIComponent(cursor)}`);
    expect(response.status, response.text).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(['items', 'nextCursor']);
    out.push(response.body.items);
    cursor = response.body.nextCursor;
  } while (cursor !== null && out.length < 100);
  return out;
}
const idsOf = (all: Json[][]) => all.flat().map((m: Json) => m.id as string);

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  const mint = (sub: string, claims: Partial<Principal>) => t.token({ sub, purposes: ['support'], ...claims });
  tokens.agent = await mint('agent-1', { roles: ['agent'], clearance: 'internal' });
  tokens.agent2 = await mint('agent-2', { roles: ['agent'], clearance: 'internal' });
  tokens.dpo = await mint('dpo-1', { roles: ['dpo'], clearance: 'restricted' });
  tokens.compliance = await mint('compliance-1', { roles: ['compliance'], clearance: 'restricted' });
  tokens.wang = await mint('cust-wang', { roles: [], clearance: 'restricted' });
  tokens.li = await mint('cust-li', { roles: [], clearance: 'restricted' });
  tokens.billing = await mint('agent-3', { roles: ['agent'], purposes: ['billing'], clearance: 'internal' });
  tokens.globex = await mint('agent-1', { tenant: 'globex', roles: ['agent'], clearance: 'restricted' });
  tokens.globexCompliance = await mint('compliance-1', { tenant: 'globex', roles: ['compliance'], clearance: 'restricted' });
}, 120_000);
afterAll(async () => t?.close());

describe('GET /v1/memories', () => {
  let source: string;
  let secret: Json;
  let working: Json;

  beforeAll(async () => {
    [source] = await ingest('agent', [
      chatEvent('cust-wang', '客户王先生说交付风险很高，希望下周确认发货日期。'),
      chatEvent('cust-wang', 'Mr Wang asked for the invoice in English.'),
      chatEvent('cust-li', '李女士的订单已经发货。'),
      chatEvent('cust-li', 'Ms Li prefers phone calls in the morning.'),
      chatEvent('cust-zhao', 'Zhao wants the contract renewed in March.'),
    ]);
    // Confidential: above an agent's clearance (internal), within the DPO's.
    secret = await write({
      kind: 'semantic',
      subject: 'cust-wang',
      content: { text: '王先生的信用额度是五十万' },
      sourceEventIds: [source],
      sensitivity: 'confidential',
    });
    // A working memory of session sess-1; its owner is the data subject, not the writer.
    working = await write({
      kind: 'working',
      subject: 'cust-wang',
      content: { text: 'Wang is on hold for the depot manager' },
      sourceEventIds: [source],
      session: 'sess-1',
    });
    await ingest('globex', [chatEvent('cust-wang', 'GLOBEX CANARY 并购计划')]);
  });

  it('pages through the memories the caller may read, each as GET /v1/memories/{id} returns it, hidden ones taking no place', async () => {
    const all = await pages('agent', '/v1/memories?limit=2');
    const ids = idsOf(all);
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    expect(all.slice(0, -1).every((page) => page.length === 2)).toBe(true);
    // Neither the confidential record nor the working memory (no session, not its owner), nor another tenant's.
    expect(ids).not.toContain(secret.id);
    expect(ids).not.toContain(working.id);
    const texts = all.flat().map((m: Json) => m.content.text as string);
    expect(texts).toContain('客户王先生说交付风险很高，希望下周确认发货日期。');
    expect(texts.join(' ')).not.toContain('GLOBEX CANARY');
    // First recorded first.
    const times = all.flat().map((m: Json) => Date.parse(m.recordedAt));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    for (const listed of all.flat()) {
      const byId = await call('agent', 'GET', `/v1/memories/${listed.id}`);
      expect(byId.body).toEqual(listed);
    }

    // The DPO's clearance admits the confidential record: one more, in its place.
    expect(idsOf(await pages('dpo', '/v1/memories?limit=50'))).toEqual(expect.arrayContaining([...ids, secret.id]));
  });

  it('filters by subject and kind, and lists nothing for a subject unknown or with only hidden records', async () => {
    const wang = (await pages('agent', '/v1/memories?subject=cust-wang')).flat();
    expect(wang.map((m: Json) => m.subject)).toEqual(['cust-wang', 'cust-wang']);
    expect((await pages('dpo', '/v1/memories?subject=cust-wang&kind=semantic')).flat().map((m: Json) => m.id)).toEqual([secret.id]);
    expect((await pages('agent', '/v1/memories?subject=cust-wang&kind=semantic')).flat()).toEqual([]);
    expect((await pages('agent', `/v1/memories?subject=${encodeURIComponent("x' OR 1=1 --")}`)).flat()).toEqual([]);
    // A caller without the records' purpose sees none of them.
    expect((await pages('billing', '/v1/memories')).flat()).toEqual([]);
  });

  it('lists a working memory only to its owner or in its session', async () => {
    expect(idsOf(await pages('agent2', '/v1/memories?kind=working'))).toEqual([]);
    expect(idsOf(await pages('agent2', '/v1/memories?kind=working&session=sess-2'))).toEqual([]);
    expect(idsOf(await pages('agent2', '/v1/memories?kind=working&session=sess-1'))).toEqual([working.id]);
    expect(idsOf(await pages('wang', '/v1/memories?kind=working'))).toEqual([working.id]);
    expect(idsOf(await pages('li', '/v1/memories?kind=working'))).toEqual([]);
  });

  it('keeps another tenant out: its own records only, and 404 for ours', async () => {
    const globex = (await pages('globex', '/v1/memories')).flat();
    expect(globex.map((m: Json) => m.content.text)).toEqual(['GLOBEX CANARY 并购计划']);
    const [ours] = idsOf(await pages('agent', '/v1/memories?limit=1'));
    expect((await call('globex', 'GET', `/v1/memories/${ours}`)).status).toBe(404);
    expect((await call('globex', 'GET', `/v1/memories/${ours}/versions`)).status).toBe(404);
  });

  it('refuses a cursor of another tenant, caller or filter, or a forged one, with 400 REQUEST.INVALID_CURSOR', async () => {
    const first = await call('agent', 'GET', '/v1/memories?limit=1');
    const cursor: string = first.body.nextCursor;
    expect(cursor).toEqual(expect.any(String));
    const [payload, mac] = cursor.split('.');
    const position = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = `${Buffer.from(JSON.stringify({ ...position, recordedAt: '2000-01-01T00:00:00.000Z' })).toString('base64url')}.${mac}`;
    const refused: [string, string][] = [
      ['globex', `/v1/memories?limit=1&cursor=${cursor}`],
      ['agent2', `/v1/memories?limit=1&cursor=${cursor}`],
      ['agent', `/v1/memories?limit=1&kind=episodic&cursor=${cursor}`],
      ['agent', `/v1/memories?limit=1&cursor=${forged}`],
      ['agent', `/v1/memories?limit=1&cursor=${payload}`],
      ['agent', '/v1/memories?cursor=bm90LWEtY3Vyc29y.AAAAAAAAAAAAAAAAAAAAAAAA'],
    ];
    for (const [who, path] of refused) {
      const response = await call(who, 'GET', path);
      expect(response.status, `${who} ${path}`).toBe(400);
      expect(response.contentType).toContain('application/problem+json');
      expect(response.body).toMatchObject({ status: 400, code: 'REQUEST.INVALID_CURSOR' });
    }
    // The same caller, listing and filters: the next page.
    const second = await call('agent', 'GET', `/v1/memories?limit=1&cursor=${cursor}`);
    expect(second.status).toBe(200);
    expect(second.body.items[0].id).not.toBe(first.body.items[0].id);
  });

  it('answers hostile query values with 400 REQUEST.INVALID_QUERY, naming the parameter and echoing nothing', async () => {
    const hostile = [
      'limit=0',
      'limit=201',
      'limit=-1',
      'limit=1e3',
      'limit=abc',
      'kind=bogus',
      'status=purged',
      'status=candidate',
      'kind=semantic&kind=episodic',
      'bogus=1',
      `subject=${'s'.repeat(201)}`,
      'subject=%E7%8E%8B%00',
      'session=',
      `cursor=${'A'.repeat(600)}`,
      'cursor=%3Cscript%3E',
    ];
    for (const query of hostile) {
      const response = await call('agent', 'GET', `/v1/memories?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.code, query).toBe('REQUEST.INVALID_QUERY');
      expect(response.text).not.toMatch(/bogus|globex|<script>|王/);
    }
    expect((await call('agent', 'GET', '/v1/memories?limit=200')).status).toBe(200);
    // Naming another tenant is refused before any listing, as on every endpoint.
    expect((await call('agent', 'GET', '/v1/memories?tenant=globex')).body).toMatchObject({ status: 403, code: 'AUTH.TENANT_MISMATCH' });
  });

  it('answers the same listing through GraphQL', async () => {
    const graphql = async (who: string, query: string, variables: Record<string, unknown> = {}) =>
      (await call(who, 'POST', '/graphql', { query, variables })).body;
    const rest = idsOf(await pages('agent', '/v1/memories'));
    const first = await graphql('agent', '{ memories(limit: 3) { items { id text } nextCursor } }');
    expect(first.data.memories.items.map((m: Json) => m.id)).toEqual(rest.slice(0, 3));
    const rest2 = await graphql('agent', 'query($c: String) { memories(limit: 3, cursor: $c) { items { id } nextCursor } }', {
      c: first.data.memories.nextCursor,
    });
    expect(rest2.data.memories).toEqual({ items: rest.slice(3).map((id) => ({ id })), nextCursor: null });
    const bad = await graphql('agent', '{ memories(limit: 500) { nextCursor } }');
    expect(bad.errors[0].extensions.code).toBe('REQUEST.INVALID_QUERY');
  });
});

describe('GET /v1/memories/{id}/versions', () => {
  it('lists each version oldest first, as the caller may see it, and 404 for a memory the caller may not read', async () => {
    const fact = (value: string) =>
      chatEvent('acme-hr', `关于 ACME 首席执行官的记录`, {
        occurredAt: '2026-11-01T00:00:00Z',
        content: { text: `关于 ACME 首席执行官的记录`, fact: { entity: 'ACME', attribute: '首席执行官', value } },
      });
    await ingest('agent', [fact('李伟')]);
    await ingest('agent', [fact('张敏')]);
    const disputed = (await pages('agent', '/v1/memories?status=disputed&kind=semantic')).flat();
    expect(disputed).toHaveLength(2);
    const [one] = disputed;

    const versions = await call('agent', 'GET', `/v1/memories/${one.id}/versions`);
    expect(versions.status, versions.text).toBe(200);
    expect(versions.body.items.map((v: Json) => [v.version, v.status])).toEqual([
      [1, 'active'],
      [2, 'disputed'],
    ]);
    expect(versions.body.items[1]).toEqual((await call('agent', 'GET', `/v1/memories/${one.id}`)).body);
    expect(versions.body.items[0].content.fact.value).toBe(one.content.fact.value);
    expect(versions.body.items.every((v: Json) => v.provenance.ancestry === undefined)).toBe(true);

    // GraphQL gives the same versions.
    const graphql = await call('agent', 'POST', '/graphql', { query: `{ memoryVersions(id: "${one.id}") { version status } }` });
    expect(graphql.body.data.memoryVersions).toEqual([
      { version: 1, status: 'active' },
      { version: 2, status: 'disputed' },
    ]);

    expect((await call('agent', 'GET', '/v1/memories/mem_unknown/versions')).body).toMatchObject({ status: 404, code: 'MEMORY.NOT_FOUND' });
    expect((await call('globex', 'GET', `/v1/memories/${one.id}/versions`)).status).toBe(404);
    expect((await call('billing', 'GET', `/v1/memories/${one.id}/versions`)).status).toBe(404);
    expect((await call('agent', 'GET', `/v1/memories/${one.id}/versions?bogus=1`)).body.code).toBe('REQUEST.INVALID_QUERY');
  });
});

describe('GET /v1/erasures', () => {
  const settle = (id: string, who: string) => settleErasure(t.url, tokens[who], id);
  const erase = async (who: string, subject: string) => {
    const response = await call(who, 'POST', '/v1/erasures', { scope: { type: 'subject', subject }, reason: 'subject_request' });
    expect(response.status, response.text).toBe(202);
    return response.body.requestId as string;
  };
  let byCompliance: string[];
  let byLi: string;

  beforeAll(async () => {
    await ingest('agent', [chatEvent('cust-gone-1', 'forget me one'), chatEvent('cust-gone-2', 'forget me two')]);
    byCompliance = [await erase('compliance', 'cust-gone-1'), await erase('compliance', 'cust-gone-2')];
    // A data subject's own request (denied by the default policy, but theirs to follow).
    byLi = await erase('li', 'cust-li');
    for (const id of byCompliance) await settle(id, 'compliance');
    await settle(byLi, 'li');
  }, 120_000);

  it('lists every erasure of the tenant to compliance and dpo, in request order, each as GET /v1/erasures/{id} shows it', async () => {
    const all = await pages('compliance', '/v1/erasures?limit=1');
    expect(all.flat().map((e: Json) => e.requestId)).toEqual([...byCompliance, byLi]);
    expect(all.every((page) => page.length === 1)).toBe(true);
    for (const listed of all.flat()) expect(listed).toEqual((await call('compliance', 'GET', `/v1/erasures/${listed.requestId}`)).body);
    expect((await pages('dpo', '/v1/erasures')).flat().map((e: Json) => e.requestId)).toEqual([...byCompliance, byLi]);

    const completed = (await pages('compliance', '/v1/erasures?status=completed')).flat();
    expect(completed.map((e: Json) => e.requestId)).toEqual(byCompliance);
    expect(completed.every((e: Json) => e.certificateAvailable)).toBe(true);
    expect((await pages('compliance', '/v1/erasures?status=denied')).flat().map((e: Json) => e.requestId)).toEqual([byLi]);
  });

  it('shows a data subject only their own requests, and others none, nor another tenant', async () => {
    expect((await pages('li', '/v1/erasures')).flat().map((e: Json) => e.requestId)).toEqual([byLi]);
    expect((await pages('wang', '/v1/erasures')).flat()).toEqual([]);
    expect((await pages('agent', '/v1/erasures')).flat()).toEqual([]);
    expect((await pages('globexCompliance', '/v1/erasures')).flat()).toEqual([]);
  });

  it('refuses a borrowed or forged cursor and hostile values with 400, and answers through GraphQL alike', async () => {
    const { nextCursor } = (await call('compliance', 'GET', '/v1/erasures?limit=1')).body;
    for (const [who, path] of [
      ['globexCompliance', `/v1/erasures?limit=1&cursor=${nextCursor}`],
      ['dpo', `/v1/erasures?limit=1&cursor=${nextCursor}`],
      ['compliance', `/v1/erasures?limit=1&status=completed&cursor=${nextCursor}`],
      ['compliance', `/v1/erasures?limit=1&cursor=${nextCursor.split('.')[0]}.AAAA`],
    ]) {
      expect((await call(who, 'GET', path)).body, path).toMatchObject({ status: 400, code: 'REQUEST.INVALID_CURSOR' });
    }
    for (const query of ['limit=201', 'status=gone', 'limit=x', 'subject=cust-li']) {
      expect((await call('compliance', 'GET', `/v1/erasures?${query}`)).body, query).toMatchObject({
        status: 400,
        code: 'REQUEST.INVALID_QUERY',
      });
    }
    const graphql = await call('compliance', 'POST', '/graphql', {
      query: '{ erasures(limit: 2) { items { requestId status } nextCursor } }',
    });
    expect(graphql.body.data.erasures.items.map((e: Json) => e.requestId)).toEqual(byCompliance);
    expect(graphql.body.data.erasures.nextCursor).toEqual(expect.any(String));
  });
});
