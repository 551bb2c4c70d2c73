import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { chatEvent, startTestApp, type TestApp } from '../testing';
import { RedTeam, pool, type Secret } from './harness';

/**
 * Red team: derived records (consolidation views, explicit memories citing
 * sources, promotions) must be withheld wherever one of their inputs or
 * ancestors is: a legal hold placed on a source record or subject after the
 * view was made, a source's sensitivity, purposes or expiry. Probed over
 * REST recall, GET by id and GraphQL, as an ordinary agent; every probe is
 * counted and none may show a view's id or the marker it quotes.
 */
const TENANT = 'acme';
let t: TestApp;
let red: RedTeam;
let now = Date.parse('2026-11-21T09:00:00Z');
const tokens: Record<string, string> = {};

const marker = (name: string) => `${name}${Math.random().toString(36).slice(2, 8)}`;
const send = (who: string, method: string, path: string, body?: unknown) => red.send({ token: tokens[who], method, path, body });

async function ingest(events: unknown[]): Promise<string[]> {
  const response = await send('writer', 'POST', '/v1/events', { events });
  expect(response.status, response.text).toBe(202);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
  return (JSON.parse(response.text).events as { id: string }[]).map((e) => e.id);
}

/** The consolidation views that derive from an event, after consolidating its subject (the workflow's activity, called directly). */
async function consolidatedViews(eventId: string): Promise<string[]> {
  await t.elma.consolidation.consolidate(TENANT, `mem_ep_${eventId}`);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
  const ids: string[] = [];
  for await (const entry of t.elma.index.lineage(TENANT)) {
    if (entry.rule.startsWith('consolidate.') && entry.sourceEventIds.includes(eventId)) ids.push(entry.id);
  }
  return ids;
}

/** Ids recalled by `who` for `query`. */
async function recalled(who: string, query: string): Promise<string[]> {
  const response = await send(who, 'POST', '/v1/recall', { query, purpose: 'support', budgetTokens: 2000 });
  expect(response.status, response.text).toBe(200);
  return (JSON.parse(response.text).items as { id: string }[]).map((item) => item.id);
}

async function placeHold(scope: Record<string, string[]>): Promise<string> {
  const response = await send('legal', 'POST', '/v1/legal-holds', { scope, reason: 'matter 7' });
  expect(response.status, response.text).toBe(201);
  return JSON.parse(response.text).id as string;
}

async function liftHold(id: string): Promise<void> {
  expect((await send('legal', 'DELETE', `/v1/legal-holds/${id}`)).status).toBe(204);
}

/**
 * Every read surface an ordinary agent has, for each secret: recall (REST,
 * with relation hops, and GraphQL), GET and GraphQL by id. Fails the test on
 * the first leak it found; the suite's tally keeps counting.
 */
async function probeAll(label: string, who: string, secrets: Secret[], queries: string[]): Promise<void> {
  const before = red.leaks.length;
  const tasks: (() => Promise<unknown>)[] = [];
  for (const query of queries) {
    tasks.push(() =>
      red.probe(
        `${label}/recall`,
        { token: tokens[who], method: 'POST', path: '/v1/recall', body: { query, purpose: 'support', budgetTokens: 4000 } },
        secrets,
      ),
    );
    tasks.push(() =>
      red.probe(
        `${label}/recall-graph`,
        { token: tokens[who], method: 'POST', path: '/v1/recall', body: { query, purpose: 'support', budgetTokens: 4000, hops: 2 } },
        secrets,
      ),
    );
    for (const kinds of [['episodic'], ['semantic']]) {
      tasks.push(() =>
        red.probe(
          `${label}/recall-${kinds[0]}`,
          { token: tokens[who], method: 'POST', path: '/v1/recall', body: { query, purpose: 'support', budgetTokens: 4000, kinds } },
          secrets,
        ),
      );
    }
    tasks.push(() =>
      red.probe(
        `${label}/graphql-recall`,
        {
          token: tokens[who],
          method: 'POST',
          path: '/graphql',
          body: {
            query: `{ recall(input: {query: "${query}", purpose: "support"}) { items { id text citation { id sourceEventIds } } context } }`,
          },
        },
        secrets,
      ),
    );
  }
  for (const secret of secrets) {
    tasks.push(() => red.probe(`${label}/get`, { token: tokens[who], method: 'GET', path: `/v1/memories/${secret.id}` }, secrets));
    tasks.push(() =>
      red.probe(`${label}/get-purpose`, { token: tokens[who], method: 'GET', path: `/v1/memories/${secret.id}?purpose=support` }, secrets),
    );
    tasks.push(() =>
      red.probe(
        `${label}/graphql`,
        {
          token: tokens[who],
          method: 'POST',
          path: '/graphql',
          body: { query: `{ memory(id: "${secret.id}") { id text subject provenance { sourceEventIds parentIds } } }` },
        },
        secrets,
      ),
    );
  }
  await pool(tasks, 4, (task) => task());
  expect(red.leaks.slice(before)).toEqual([]);
}

beforeAll(async () => {
  t = await startTestApp({ clock: { now: () => new Date(now) } });
  red = new RedTeam(t, 'lineage');
  const mint = (sub: string, claims: Partial<Principal>) => t.token({ tenant: TENANT, sub, ...claims });
  tokens.writer = await mint('writer-1', { roles: ['agent'], purposes: ['support', 'hr'], clearance: 'restricted' });
  tokens.agent = await mint('agent-1', { roles: ['agent'], purposes: ['support'], clearance: 'confidential' });
  tokens.legal = await mint('legal-1', { roles: ['legal'], purposes: ['support'], clearance: 'restricted' });
}, 60_000);

afterAll(async () => {
  await (red ? red.close() : t?.close());
});

describe('derived records inherit the restrictions of their inputs', () => {
  it('a legal hold on a source record withholds the consolidation views quoting it, until it is lifted', async () => {
    const m = marker('quayflood');
    const [held, ...rest] = await ingest([
      chatEvent('cust-h1', `The ${m} warehouse in Ningbo flooded overnight and stock was lost.`, { occurredAt: '2026-11-20T10:00:00Z' }),
      chatEvent('cust-h1', 'I will send the signed contract by Monday.', { occurredAt: '2026-11-20T10:01:00Z' }),
      chatEvent('cust-h1', '我是华东区的销售经理，负责大客户。', { occurredAt: '2026-11-20T10:02:00Z' }),
      chatEvent('cust-h1', 'The shipment to Shanghai is delayed by two weeks.', { occurredAt: '2026-11-20T10:03:00Z' }),
    ]);
    expect(rest).toHaveLength(3);
    const views = await consolidatedViews(held);
    expect(views.length).toBeGreaterThan(0);
    const summary = views.find((id) => id.startsWith('mem_cs_'))!;
    expect(await recalled('agent', m)).toContain(summary);

    const hold = await placeHold({ recordIds: [`mem_ep_${held}`] });
    const secrets = [`mem_ep_${held}`, ...views].map((id) => ({ id, marker: m, label: `held ${id}` }));
    await probeAll('hold-record', 'agent', secrets, [
      m,
      'Ningbo warehouse flooded',
      'signed contract Monday shipment Shanghai',
      '华东区 销售经理',
    ]);
    expect(await recalled('legal', m)).toContain(summary);

    await liftHold(hold);
    expect(await recalled('agent', m)).toContain(summary);
    expect((await send('agent', 'GET', `/v1/memories/${summary}`)).status).toBe(200);
  });

  it('holds on sources of many subjects, in English and Chinese, withhold every view quoting them, each hold on its own', async () => {
    const subjects = Array.from({ length: 6 }, (_, i) => `cust-m${i}`);
    const planted: { subject: string; marker: string; source: string; views: string[] }[] = [];
    for (const [i, subject] of subjects.entries()) {
      const m = marker(`tidemark${i}x`);
      const chinese = i % 2 === 1;
      const [source] = await ingest([
        chatEvent(
          subject,
          chinese ? `仓库 ${m} 昨夜被淹，货物全部损失。` : `The ${m} depot was flooded last night and all goods were lost.`,
          { occurredAt: '2026-11-20T12:00:00Z' },
        ),
        chatEvent(subject, chinese ? '我下周一会寄出签好的合同。' : 'I will send the signed contract by Monday.', {
          occurredAt: '2026-11-20T12:01:00Z',
        }),
        chatEvent(subject, chinese ? '我喜欢邮件联系，不要打电话。' : 'I prefer email over phone calls.', {
          occurredAt: '2026-11-20T12:02:00Z',
        }),
        chatEvent(subject, chinese ? '去上海的货运推迟了两周。' : 'The shipment to Shanghai is delayed by two weeks.', {
          occurredAt: '2026-11-20T12:03:00Z',
        }),
      ]);
      planted.push({ subject, marker: m, source, views: await consolidatedViews(source) });
    }
    const held = planted.filter((_, i) => i % 3 !== 2);
    const free = planted.filter((_, i) => i % 3 === 2);
    const holds = [];
    for (const p of held) holds.push(await placeHold({ recordIds: [`mem_ep_${p.source}`] }));
    const secrets = held.flatMap((p) =>
      [`mem_ep_${p.source}`, ...p.views.filter((id) => id.startsWith('mem_cs_'))].map((id) => ({
        id,
        marker: p.marker,
        label: `${p.subject} ${id}`,
      })),
    );
    await probeAll('many-holds', 'agent', secrets, [
      ...held.map((p) => p.marker),
      'depot flooded goods lost',
      '仓库 被淹 货物 损失',
      'signed contract Monday',
      '上海 货运 推迟',
    ]);
    // Subjects without a hold are not caught by anyone else's.
    for (const p of free)
      expect(await recalled('agent', p.marker)).toEqual(
        expect.arrayContaining(p.views.filter((id) => id.startsWith('mem_cs_')).slice(0, 1)),
      );
    for (const id of holds) await liftHold(id);
    for (const p of held)
      expect(await recalled('agent', p.marker)).toEqual(
        expect.arrayContaining(p.views.filter((id) => id.startsWith('mem_cs_')).slice(0, 1)),
      );
  });

  it('a hold on a subject withholds a memory another subject derived from that subject’s events', async () => {
    const m = marker('ledgerkite');
    const [source] = await ingest([chatEvent('cust-h2', `Our ${m} ledger shows an unpaid invoice of 40,000 yuan.`)]);
    const written = await send('writer', 'POST', '/v1/memories', {
      subject: 'cust-other',
      kind: 'semantic',
      content: { text: `Account note: the ${m} ledger has an unpaid invoice.` },
      sourceEventIds: [source],
    });
    expect(written.status, written.text).toBe(201);
    const derived = JSON.parse(written.text).memory.id as string;
    expect(JSON.parse(written.text).memory.provenance.ancestry).toBeUndefined();
    await t.elma.runner.waitFor(await t.elma.log.headPosition());
    expect(await recalled('agent', m)).toContain(derived);

    const hold = await placeHold({ subjects: ['cust-h2'] });
    await probeAll(
      'hold-subject',
      'agent',
      [
        { id: derived, marker: m },
        { id: `mem_ep_${source}`, marker: m },
      ],
      [m, 'unpaid invoice ledger'],
    );
    await liftHold(hold);
    expect(await recalled('agent', m)).toContain(derived);
  });

  it('a hold on a record reaches what was promoted from a working memory citing it', async () => {
    const m = marker('pierlamp');
    const [source] = await ingest([chatEvent('cust-h3', `The ${m} pier crane is out of service until Friday.`)]);
    const working = await send('writer', 'POST', '/v1/memories', {
      kind: 'working',
      session: 'sess-1',
      content: { text: `Crane ${m} is down until Friday.` },
      sourceEventIds: [source],
    });
    expect(working.status, working.text).toBe(201);
    const promoted = await send('writer', 'POST', `/v1/memories/${JSON.parse(working.text).memory.id}/promote`, { session: 'sess-1' });
    expect(promoted.status, promoted.text).toBe(201);
    const derived = JSON.parse(promoted.text).memory.id as string;
    await t.elma.runner.waitFor(await t.elma.log.headPosition());
    expect(await recalled('agent', m)).toContain(derived);

    const hold = await placeHold({ recordIds: [`mem_ep_${source}`] });
    await probeAll('hold-ancestor', 'agent', [{ id: derived, marker: m }], [m, 'crane down until Friday']);
    await liftHold(hold);
    expect(await recalled('agent', m)).toContain(derived);
  });

  it('a view over a restricted source is restricted: the summary is not shown to a confidential clearance', async () => {
    const m = marker('vaultpine');
    const [secret] = await ingest([
      chatEvent('cust-s1', `The ${m} board approved the layoff plan for the Suzhou plant.`, {
        sensitivity: 'restricted',
        occurredAt: '2026-11-20T11:00:00Z',
      }),
      chatEvent('cust-s1', 'Please call me back about the invoice.', { occurredAt: '2026-11-20T11:01:00Z' }),
      chatEvent('cust-s1', 'The delivery address changed to Hangzhou.', { occurredAt: '2026-11-20T11:02:00Z' }),
    ]);
    const views = await consolidatedViews(secret);
    expect(views.length).toBeGreaterThan(0);
    await probeAll(
      'sensitivity',
      'agent',
      [`mem_ep_${secret}`, ...views].map((id) => ({ id, marker: m })),
      [m, 'layoff plan Suzhou', 'invoice delivery address Hangzhou'],
    );
  });

  it('a memory citing a source keeps to the purposes the source allows', async () => {
    const m = marker('salarymoth');
    const [source] = await ingest([chatEvent('cust-p1', `The ${m} salary review lowered the bonus pool.`, { purposes: ['hr'] })]);
    const widened = await send('writer', 'POST', '/v1/memories', {
      kind: 'semantic',
      content: { text: `Note: the ${m} salary review lowered the bonus pool.` },
      sourceEventIds: [source],
      purposes: ['support'],
    });
    expect(widened.status, widened.text).toBe(422);
    expect(JSON.parse(widened.text).code).toBe('REQUEST.VALIDATION_FAILED');
    await probeAll('purpose', 'agent', [{ id: `mem_ep_${source}`, marker: m }], [m, 'salary review bonus pool']);
  });

  it('a memory citing a source expires with it', async () => {
    const m = marker('ferrydusk');
    const [source] = await ingest([chatEvent('cust-r1', `The ${m} ferry timetable changes next week.`, { retention: 'session' })]);
    const written = await send('writer', 'POST', '/v1/memories', {
      kind: 'semantic',
      retention: 'long_term',
      content: { text: `The ${m} ferry timetable is about to change.` },
      sourceEventIds: [source],
    });
    expect(written.status, written.text).toBe(201);
    const derived = JSON.parse(written.text).memory;
    expect(derived.retention.expiresAt).not.toBeNull();
    await t.elma.runner.waitFor(await t.elma.log.headPosition());
    expect(await recalled('agent', m)).toContain(derived.id);
    now += 2 * 86_400_000;
    await probeAll(
      'retention',
      'agent',
      [
        { id: derived.id, marker: m },
        { id: `mem_ep_${source}`, marker: m },
      ],
      [m, 'ferry timetable'],
    );
  });

  it('leaks nothing and never fails', () => {
    expect(red.probes).toBeGreaterThanOrEqual(150);
    expect(red.leaks).toEqual([]);
    expect(red.serverErrors).toEqual([]);
  });
});
