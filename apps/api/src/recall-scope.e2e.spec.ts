import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { callApi, chatEvent, startTestApp, type Json, type TestApp } from './testing';

/**
 * Recall and listing narrowed by a `filter` (subjects, entities, projects,
 * sessions, sources, a valid-time range, kinds) over HTTP: each key narrows to
 * exactly what it names, a scope never widens the caller's policy, and a
 * subject the caller may not see answers exactly as a subject with no memories.
 */
let t: TestApp;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);

const QUESTION = '陈女士的发票地址是什么？';

async function recall(who: string, body: Record<string, unknown>) {
  return call(who, 'POST', '/v1/recall', { query: QUESTION, purpose: 'support', budgetTokens: 4000, ...body });
}

/** The texts a recall as `who` returns, sorted; fails on anything but 200. */
async function recalled(
  filter: Record<string, unknown> | undefined,
  who = 'agent',
  extra: Record<string, unknown> = {},
): Promise<string[]> {
  const response = await recall(who, { ...(filter ? { filter } : {}), ...extra });
  expect(response.status, response.text).toBe(200);
  return (response.body.items as Json[]).map((item) => item.text as string).sort();
}

/** Every record a listing as `who` returns (one page of up to 200), by text, sorted. */
async function listed(query: string, who = 'agent'): Promise<string[]> {
  const response = await call(who, 'GET', `/v1/memories?limit=200&${query}`);
  expect(response.status, response.text).toBe(200);
  return (response.body.items as Json[]).map((item) => item.content.text as string).sort();
}

const CHEN_ADDRESS = '陈女士的发票地址是上海市浦东新区世纪大道100号。';
const CHEN_TITLE = '陈女士希望发票抬头改为公司名称，发票地址不变。';
const WANG = '王先生的发票地址是北京市朝阳区建国路88号。';
const WANG_EN = 'Mr Wang wants the invoice address 发票地址 written in English.';
const LI = '李女士的发票地址是广州市天河区。';
const ZHAO = '赵先生询问发票地址是否可以修改。';
const ZHOU = '周女士的发票地址是深圳市南山区。';
const ZHOU_FACT = '周女士 发票地址: 深圳市南山区';
const VIP = '钱先生的发票地址是香港中环。';

const on = (day: number) => `2026-11-0${day}T10:00:00Z`;

beforeAll(async () => {
  t = await startTestApp();
  const mint = (sub: string, claims: Partial<Principal>) => t.token({ sub, purposes: ['support'], ...claims });
  tokens.agent = await mint('agent-1', { roles: ['agent'], clearance: 'internal' });
  tokens.dpo = await mint('dpo-1', { roles: ['dpo'], clearance: 'restricted' });
  tokens.globex = await mint('agent-1', { tenant: 'globex', roles: ['agent'], clearance: 'internal' });
  // Seven memories about five customers (one event states a fact: an eighth, semantic record).
  const events = [
    chatEvent('cust-chen', CHEN_ADDRESS, {
      occurredAt: on(1),
      source: { system: 'crm', channel: 'email' },
      session: 's-chen',
      project: 'falcon',
    }),
    chatEvent('cust-chen', CHEN_TITLE, { occurredAt: on(2), session: 's-chen' }),
    chatEvent('cust-wang', WANG, { occurredAt: on(3), project: 'eagle' }),
    chatEvent('cust-wang', WANG_EN, { occurredAt: on(4) }),
    chatEvent('cust-li', LI, { occurredAt: on(5), source: { system: 'mail', channel: 'email' } }),
    chatEvent('cust-zhao', ZHAO, { occurredAt: on(6), session: 's-zhao' }),
    chatEvent('cust-zhou', ZHOU, {
      occurredAt: on(7),
      content: { text: ZHOU, fact: { entity: '周女士', attribute: '发票地址', value: '深圳市南山区' } },
    }),
    // Above an agent's clearance (internal): a customer an agent may not know exists.
    chatEvent('cust-vip', VIP, { occurredAt: on(8), sensitivity: 'restricted' }),
  ];
  const ingested = await call('agent', 'POST', '/v1/events', { events });
  expect(ingested.status, ingested.text).toBe(202);
  // Another tenant's customer, whose name an attacker may know.
  const other = await call('globex', 'POST', '/v1/events', { events: [chatEvent('cust-globex', '孙女士的发票地址是杭州市西湖区。')] });
  expect(other.status, other.text).toBe(202);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
}, 120_000);
afterAll(async () => t?.close());

describe('POST /v1/recall with a filter', () => {
  it("recalls only that customer's memories when the question names one customer among five", async () => {
    // Unscoped, the question finds other customers' invoice addresses too; scoped, only 陈女士's.
    expect(await recalled(undefined)).toEqual(expect.arrayContaining([CHEN_ADDRESS, WANG]));
    expect(await recalled({ subjects: ['cust-chen'] })).toEqual([CHEN_ADDRESS, CHEN_TITLE].sort());
  });

  it('subjects: any of several', async () => {
    expect(await recalled({ subjects: ['cust-li', 'cust-zhao'] })).toEqual([LI, ZHAO].sort());
  });

  it('entities: the records stating a fact about the entity', async () => {
    expect(await recalled({ entities: ['周女士'] })).toEqual([ZHOU_FACT]);
  });

  it('projects: the records of the project', async () => {
    expect(await recalled({ projects: ['falcon'] })).toEqual([CHEN_ADDRESS]);
  });

  it('sessions: the records that came from the conversation, the episode and nothing else', async () => {
    expect(await recalled({ sessions: ['s-zhao'] })).toEqual([ZHAO]);
  });

  it('sources: a system, a channel, or both', async () => {
    expect(await recalled({ sources: [{ system: 'mail' }] })).toEqual([LI]);
    expect(await recalled({ sources: [{ system: 'crm', channel: 'email' }] })).toEqual([CHEN_ADDRESS]);
    expect(await recalled({ sources: [{ channel: 'email' }] })).toEqual([CHEN_ADDRESS, LI].sort());
  });

  it('occurredAfter and occurredBefore: after <= valid time < before', async () => {
    expect(await recalled({ occurredAfter: on(3), occurredBefore: on(5) })).toEqual([WANG, WANG_EN].sort());
    expect(await recalled({ occurredAfter: '2026-11-03T18:00:00+08:00', occurredBefore: on(4) })).toEqual([WANG]);
  });

  it('kinds: in the filter, or at the top level as before (deprecated)', async () => {
    expect(await recalled({ kinds: ['semantic'], subjects: ['cust-zhou'] })).toEqual([ZHOU_FACT]);
    expect(await recalled({ subjects: ['cust-zhou'] }, 'agent', { kinds: ['semantic'] })).toEqual([ZHOU_FACT]);
  });

  it('keys combine with AND', async () => {
    expect(await recalled({ subjects: ['cust-chen'], sources: [{ channel: 'chat' }] })).toEqual([CHEN_TITLE]);
    expect(await recalled({ subjects: ['cust-chen'], projects: ['eagle'] })).toEqual([]);
  });

  it.each([
    ['an unknown key', { customers: ['cust-chen'] }, 'filter'],
    ['101 subjects', { subjects: Array.from({ length: 101 }, (_, i) => `cust-${i}`) }, 'filter.subjects'],
    ['an empty list', { entities: [] }, 'filter.entities'],
    ['a value of 201 characters', { projects: ['p'.repeat(201)] }, 'filter.projects.0'],
    ['a control character', { sessions: ['s\u001fx'] }, 'filter.sessions.0'],
    ['a source naming neither system nor channel', { sources: [{}] }, 'filter.sources.0'],
    ['a date without an offset', { occurredAfter: '2026-11-01T10:00:00' }, 'filter.occurredAfter'],
    ['a range that ends before it starts', { occurredAfter: on(5), occurredBefore: on(3) }, 'filter.occurredBefore'],
    ['an empty range', { occurredAfter: on(3), occurredBefore: on(3) }, 'filter.occurredBefore'],
  ])('refuses %s with 422 REQUEST.VALIDATION_FAILED', async (_name, filter, path) => {
    const response = await recall('agent', { filter });
    expect(response.status, response.text).toBe(422);
    expect(response.contentType).toContain('application/problem+json');
    expect(response.body.code).toBe('REQUEST.VALIDATION_FAILED');
    expect(response.body.errors.map((e: Json) => e.path)).toContain(path);
  });

  it('refuses kinds given both at the top level and in the filter', async () => {
    const response = await recall('agent', { kinds: ['semantic'], filter: { kinds: ['episodic'] } });
    expect(response.status, response.text).toBe(422);
    expect(response.body.code).toBe('REQUEST.VALIDATION_FAILED');
    expect(response.body.errors).toEqual([expect.objectContaining({ path: 'filter.kinds' })]);
  });

  describe('a scope never widens the policy', () => {
    /** A recall's answer without what names this one recall. */
    const shape = async (who: string, filter: Record<string, unknown>) => {
      const response = await recall(who, { filter });
      const { recallId, ...body } = response.body;
      expect(typeof recallId).toBe('string');
      return { status: response.status, body };
    };

    it('a subject the policy hides answers exactly as a subject with no memories', async () => {
      // The memory exists: someone cleared for it recalls it.
      expect(await recalled({ subjects: ['cust-vip'] }, 'dpo')).toEqual([VIP]);
      const hidden = await shape('agent', { subjects: ['cust-vip'] });
      expect(hidden).toEqual(await shape('agent', { subjects: ['cust-nobody'] }));
      expect(hidden.status).toBe(200);
      expect(hidden.body.items).toEqual([]);
      // Naming a visible customer beside the hidden one admits only the visible one's.
      expect(await recalled({ subjects: ['cust-li', 'cust-vip'] })).toEqual([LI]);
    });

    it("another tenant's subject answers exactly as a subject with no memories", async () => {
      const foreign = await shape('agent', { subjects: ['cust-globex'] });
      expect(foreign).toEqual(await shape('agent', { subjects: ['cust-nobody'] }));
      expect(foreign.body.items).toEqual([]);
    });
  });

  it('GraphQL takes the same filter and refuses what REST refuses with the same code', async () => {
    const gql = (input: Record<string, unknown>) =>
      call('agent', 'POST', '/graphql', {
        query: 'query Q($input: RecallInput!) { recall(input: $input) { items { text } } }',
        variables: { input: { query: QUESTION, purpose: 'support', budgetTokens: 4000, ...input } },
      });
    const scoped = await gql({ filter: { subjects: ['cust-chen'], sources: [{ channel: 'email' }] } });
    expect(scoped.status, scoped.text).toBe(200);
    expect(scoped.body.data.recall.items.map((i: Json) => i.text)).toEqual([CHEN_ADDRESS]);
    for (const input of [
      { kinds: ['semantic'], filter: { kinds: ['episodic'] } },
      { filter: { subjects: Array.from({ length: 101 }, (_, i) => `c-${i}`) } },
      { filter: { occurredAfter: on(5), occurredBefore: on(3) } },
    ]) {
      const refused = await gql(input);
      expect(refused.body.errors?.[0]?.extensions?.code, refused.text).toBe('REQUEST.VALIDATION_FAILED');
    }
  });
});

describe('GET /v1/memories with the same keys', () => {
  it('narrows by subjects, entities, projects, sessions, sources, valid time and kinds, each repeatable', async () => {
    expect(await listed('subjects=cust-li&subjects=cust-zhao')).toEqual([LI, ZHAO].sort());
    expect(await listed(`entities=${encodeURIComponent('周女士')}`)).toEqual([ZHOU_FACT]);
    expect(await listed('projects=falcon')).toEqual([CHEN_ADDRESS]);
    expect(await listed('sessions=s-zhao')).toEqual([ZHAO]);
    expect(await listed('sources=mail:')).toEqual([LI]);
    expect(await listed('sources=crm:email')).toEqual([CHEN_ADDRESS]);
    expect(await listed('sources=:email&sources=mail:')).toEqual([CHEN_ADDRESS, LI].sort());
    expect(await listed(`occurredAfter=${encodeURIComponent(on(3))}&occurredBefore=${encodeURIComponent(on(5))}`)).toEqual(
      [WANG, WANG_EN].sort(),
    );
    expect(await listed('kinds=semantic&subjects=cust-zhou')).toEqual([ZHOU_FACT]);
    // The existing `subject` still narrows, and combines with the rest.
    expect(await listed('subject=cust-chen&sessions=s-chen&sources=:email')).toEqual([CHEN_ADDRESS]);
  });

  it('answers a hidden or foreign subject as an unknown one, and never widens the policy', async () => {
    expect(await listed('subjects=cust-vip', 'dpo')).toEqual([VIP]);
    expect(await listed('subjects=cust-vip')).toEqual([]);
    expect(await listed('subjects=cust-li&subjects=cust-vip')).toEqual([LI]);
    expect(await listed('subjects=cust-globex')).toEqual([]);
  });

  it.each([
    ['kind and kinds together', 'kind=semantic&kinds=episodic'],
    ['a source without a colon', 'sources=mail'],
    ['a source naming neither side', 'sources=:'],
    ['a range that ends before it starts', `occurredAfter=${encodeURIComponent(on(5))}&occurredBefore=${encodeURIComponent(on(3))}`],
    ['101 subjects', Array.from({ length: 101 }, (_, i) => `subjects=c-${i}`).join('&')],
  ])('refuses %s as an invalid query', async (_name, query) => {
    const response = await call('agent', 'GET', `/v1/memories?${query}`);
    expect(response.status, response.text).toBe(400);
    expect(response.body.code).toBe('REQUEST.INVALID_QUERY');
  });

  it('binds the cursor to the filter: a cursor of one scope does not page another', async () => {
    const first = await call('agent', 'GET', '/v1/memories?limit=1&subjects=cust-chen');
    expect(first.status, first.text).toBe(200);
    const cursor = encodeURIComponent(first.body.nextCursor as string);
    expect((await call('agent', 'GET', `/v1/memories?limit=1&subjects=cust-chen&cursor=${cursor}`)).status).toBe(200);
    expect((await call('agent', 'GET', `/v1/memories?limit=1&subjects=cust-wang&cursor=${cursor}`)).status).toBe(400);
  });
});

describe('working memories of another session', () => {
  it("never crowd the caller's own session out of its recall, whatever the filter", async () => {
    // A tenant of its own: its working memories stay out of the counts above.
    const mint = (sub: string) => t.token({ tenant: 'initech', sub, roles: ['agent'], purposes: ['support'], clearance: 'internal' });
    tokens.mine = await mint('agent-mine');
    tokens.theirs = await mint('agent-theirs');
    const ingested = await call('mine', 'POST', '/v1/events', chatEvent('cust-kim', 'Kim asked about the okapi order.'));
    expect(ingested.status, ingested.text).toBe(202);
    const source = ingested.body.events[0].id as string;
    const working = (who: string, session: string, text: string) =>
      call(who, 'POST', '/v1/memories', { kind: 'working', session, content: { text }, sourceEventIds: [source] });
    const own = 'Check the okapi order before replying.';
    expect((await working('mine', 'w-mine', own)).status).toBe(201);
    // Another session fills more than a recall's candidates with better matches the caller may not see.
    for (let i = 0; i < 35; i += 1) expect((await working('theirs', 'w-theirs', `okapi okapi okapi okapi ${i}`)).status).toBe(201);
    await t.elma.runner.waitFor(await t.elma.log.headPosition());
    for (const filter of [{ kinds: ['working'] }, { subjects: ['cust-kim'] }, undefined]) {
      const response = await call('mine', 'POST', '/v1/recall', {
        query: 'okapi',
        purpose: 'support',
        session: 'w-mine',
        ...(filter ? { filter } : {}),
      });
      expect(response.status, response.text).toBe(200);
      const texts = (response.body.items as Json[]).map((item) => item.text as string);
      expect(texts).toContain(own);
      expect(texts.some((text) => text.startsWith('okapi okapi'))).toBe(false);
    }
  });
});

// Last: the derived record it writes joins several scopes the cases above count exactly.
describe('derived records', () => {
  it('a record derived from two customers’ memories joins the scope of each, and of their sessions and sources', async () => {
    // 陈女士's email (session s-chen) and 王先生's chat turn about the address.
    const [chen, wang] = await Promise.all(
      ['subjects=cust-chen&sources=crm:email', 'subjects=cust-wang&projects=eagle'].map(async (query) => {
        const response = await call('agent', 'GET', `/v1/memories?${query}&kinds=episodic`);
        expect(response.body.items).toHaveLength(1);
        return response.body.items[0].provenance.sourceEventIds[0] as string;
      }),
    );
    const summary = '两位客户都询问了发票地址的写法。';
    const created = await call('agent', 'POST', '/v1/memories', {
      kind: 'semantic',
      subject: 'cust-chen',
      content: { text: summary },
      sourceEventIds: [chen, wang],
      purposes: ['support'],
    });
    expect(created.status, created.text).toBe(201);
    await t.elma.runner.waitFor(await t.elma.log.headPosition());
    expect(await recalled({ subjects: ['cust-wang'] })).toEqual([summary, WANG, WANG_EN].sort());
    expect(await recalled({ subjects: ['cust-chen'] })).toContain(summary);
    expect(await recalled({ subjects: ['cust-li'] })).not.toContain(summary);
    expect(await recalled({ sessions: ['s-chen'] })).toContain(summary);
    expect(await recalled({ sources: [{ system: 'crm', channel: 'email' }] })).toContain(summary);
    expect(await listed('subjects=cust-wang')).toContain(summary);
  });
});
