import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { callApi, chatEvent, startTestApp, type TestApp } from './testing';

/**
 * The five kinds beyond their text: working memories live in one
 * session for a while, procedures have versions, relations are followed. The
 * server's clock is moved, so TTLs run out and "yesterday" is a real
 * transaction time.
 */
const DAY = 86_400_000;
const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) };

let t: TestApp;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

type Item = { id: string; kind: string; text: string; hop?: number };

/** An event to cite as the source of explicit memories. */
async function source(subject: string, text: string): Promise<string> {
  const response = await call('agent', 'POST', '/v1/events', chatEvent(subject, text));
  expect(response.status, response.text).toBe(202);
  await strong();
  return response.body.events[0].id;
}

async function write(body: Record<string, unknown>, who = 'agent') {
  const response = await call(who, 'POST', '/v1/memories', { purposes: ['support'], ...body });
  await strong();
  return response;
}

async function recall(query: string, options: Record<string, unknown> = {}): Promise<Item[]> {
  await strong();
  const response = await call('agent', 'POST', '/v1/recall', { query, purpose: 'support', budgetTokens: 2000, ...options });
  expect(response.status, response.text).toBe(200);
  return response.body.items;
}
const texts = (items: Item[]) => items.map((i) => i.text);

beforeAll(async () => {
  t = await startTestApp({ clock });
  const mint = (sub: string, claims: Partial<Principal>) => t.token({ sub, ...claims });
  tokens.agent = await mint('agent-1', { roles: ['agent'], purposes: ['support'], clearance: 'confidential' });
  tokens.auditor = await mint('auditor-1', { roles: ['auditor'], purposes: ['support'], clearance: 'confidential' });
});
afterAll(async () => t?.close());

describe('working memory: one session, a short while', () => {
  const note = 'Customer wants the Orkney shipment split across two pallets';
  let sourceId: string;

  beforeAll(async () => {
    sourceId = await source('cust-orkney', 'Call notes: shipment questions');
  });

  it('is recalled within its session, and neither in another session nor without one', async () => {
    const written = await write({ kind: 'working', content: { text: note }, sourceEventIds: [sourceId], session: 'sess-1' });
    expect(written.status, written.text).toBe(201);
    const { memory } = written.body;
    expect(memory).toMatchObject({ kind: 'working', session: 'sess-1', retention: { class: 'session' } });
    expect(Date.parse(memory.retention.expiresAt) - Date.parse(memory.recordedAt)).toBe(3_600_000);

    expect(texts(await recall('Orkney shipment pallets', { session: 'sess-1' }))).toContain(note);
    expect(texts(await recall('Orkney shipment pallets', { session: 'sess-2' }))).not.toContain(note);
    expect(texts(await recall('Orkney shipment pallets'))).not.toContain(note);
    expect(texts(await recall('Orkney shipment pallets', { kinds: ['working'] }))).toEqual([]);
  });

  it('is gone once its TTL has passed', async () => {
    const brief = 'Orkney caller is waiting on hold for the depot manager';
    expect(
      (await write({ kind: 'working', content: { text: brief }, sourceEventIds: [sourceId], session: 'sess-1', ttlSeconds: 120 })).status,
    ).toBe(201);
    expect(texts(await recall('Orkney depot manager hold', { session: 'sess-1' }))).toContain(brief);
    clock.offsetMs = 121_000;
    try {
      expect(texts(await recall('Orkney depot manager hold', { session: 'sess-1' }))).not.toContain(brief);
    } finally {
      clock.offsetMs = 0;
    }
  });

  it('is kept beyond its session when promoted: a new record citing it, no surer than it was', async () => {
    const insight = 'Orkney deliveries need a tail-lift truck';
    const working = (
      await write({ kind: 'working', content: { text: insight }, sourceEventIds: [sourceId], session: 'sess-3', confidence: 0.6 })
    ).body.memory;

    expect((await call('auditor', 'POST', `/v1/memories/${working.id}/promote`, { session: 'sess-3' })).body.code).toBe('POLICY.DENIED');
    const promoted = await call('agent', 'POST', `/v1/memories/${working.id}/promote`, { confidence: 0.9, session: 'sess-3' });
    expect(promoted.status, promoted.text).toBe(201);
    expect(promoted.body.memory).toMatchObject({
      kind: 'semantic',
      content: { text: insight },
      confidence: 0.6,
      // It outlives the session, not its source: it expires with the source event.
      retention: { class: 'standard', expiresAt: expect.any(String) },
      provenance: { parentIds: [working.id], sourceEventIds: [sourceId], rule: 'api.promote' },
    });
    expect(promoted.body.memory.session).toBeUndefined();
    expect((await call('agent', 'POST', `/v1/memories/${working.id}/promote`, { confidence: 0.9, session: 'sess-3' })).body).toMatchObject({
      duplicate: true,
      memory: { id: promoted.body.memory.id },
    });

    clock.offsetMs = 2 * 3_600_000;
    try {
      const later = await recall('Orkney tail-lift truck', { session: 'sess-3' });
      expect(later.filter((i) => i.text === insight).map((i) => i.kind)).toEqual(['semantic']);
      expect(texts(await recall('Orkney tail-lift truck'))).toContain(insight);
    } finally {
      clock.offsetMs = 0;
    }

    const again = await call('agent', 'POST', `/v1/memories/${promoted.body.memory.id}/promote`, {});
    expect(again.status).toBe(422);
    expect(again.body.code).toBe('MEMORY.NOT_PROMOTABLE');
  });

  it('keeps an edge noted in a session as a relational memory, and only as one', async () => {
    const relation = { from: { type: 'customer', id: 'orkney-farms' }, relation: 'contracts', to: { type: 'contract', id: 'c-77' } };
    const working = await write({
      kind: 'working',
      content: { text: 'Orkney Farms signed contract C-77', relation },
      sourceEventIds: [sourceId],
      session: 'sess-4',
    });
    expect(working.status, working.text).toBe(201);
    const asFact = await call('agent', 'POST', `/v1/memories/${working.body.memory.id}/promote`, { session: 'sess-4' });
    expect(asFact.status).toBe(422);
    expect(asFact.body.errors.map((e: { path: string }) => e.path)).toEqual(['content.relation']);
    const asEdge = await call('agent', 'POST', `/v1/memories/${working.body.memory.id}/promote`, { kind: 'relational', session: 'sess-4' });
    expect(asEdge.status, asEdge.text).toBe(201);
    expect(asEdge.body.memory).toMatchObject({ kind: 'relational', content: { relation } });
  });
});

describe('procedures: a new version supersedes the old one for new tasks', () => {
  const v1 = { name: 'Refund approval', version: 1, steps: ['Check the order is paid', 'Ask the team lead'] };
  const v2 = {
    name: 'refund  APPROVAL',
    version: 2,
    steps: ['Check the order is paid', 'Refunds under 100 EUR need no approval', 'Ask the finance desk'],
    conditions: ['order is paid'],
  };
  const v1Text = 'Refund approval procedure: check payment, then ask the team lead';
  const v2Text = 'Refund approval procedure: check payment; under 100 EUR no approval; else ask the finance desk';
  let sourceId: string;
  let yesterday: string;
  let first: { id: string };
  let second: { id: string };

  it('recalls only the current version, and the old one as known before the change', async () => {
    clock.offsetMs = -2 * DAY;
    try {
      sourceId = await source('ops-handbook', 'Handbook review meeting');
      const written = await write({ kind: 'procedural', content: { text: v1Text, procedure: v1 }, sourceEventIds: [sourceId] });
      expect(written.status, written.text).toBe(201);
      first = written.body.memory;
    } finally {
      clock.offsetMs = 0;
    }
    yesterday = new Date(Date.now() - DAY).toISOString();
    const written = await write({ kind: 'procedural', content: { text: v2Text, procedure: v2 }, sourceEventIds: [sourceId] });
    expect(written.status, written.text).toBe(201);
    second = written.body.memory;
    expect(written.body.superseded).toEqual([first.id]);

    expect(texts(await recall('refund approval procedure', { kinds: ['procedural'] }))).toEqual([v2Text]);
    expect(texts(await recall('refund approval procedure', { kinds: ['procedural'], knownAsOf: yesterday }))).toEqual([v1Text]);

    // Superseded records are not readable under the default policy; the index shows the revision.
    expect((await t.elma.index.get('acme', first.id))?.record).toMatchObject({
      status: 'superseded',
      version: 2,
      content: { procedure: v1 },
      resolution: { rule: 'procedure_version', against: [second.id] },
    });
  });

  it('refuses an old or equal version with different steps, and takes the same version again as a duplicate', async () => {
    const stale = await write({ kind: 'procedural', content: { text: v1Text, procedure: v1 }, sourceEventIds: [sourceId] });
    expect(stale.status).toBe(409);
    expect(stale.contentType).toContain('application/problem+json');
    expect(stale.body.code).toBe('MEMORY.PROCEDURE_VERSION_CONFLICT');

    const rival = await write({
      kind: 'procedural',
      content: { text: v2Text, procedure: { ...v2, steps: ['Refund everything'] } },
      sourceEventIds: [sourceId],
    });
    expect(rival.status).toBe(409);
    expect(rival.body.code).toBe('MEMORY.PROCEDURE_VERSION_CONFLICT');

    const retry = await write({ kind: 'procedural', content: { text: v2Text, procedure: v2 }, sourceEventIds: [sourceId] });
    expect(retry.status).toBe(201);
    expect(retry.body).toMatchObject({ duplicate: true, memory: { id: second.id } });
    expect(texts(await recall('refund approval procedure', { kinds: ['procedural'] }))).toEqual([v2Text]);
  });
});

describe('relations: who approves project Apollo', () => {
  const approves = 'Li Wei approves project Apollo.';
  // Written in Chinese, so that no word of the English question finds it: only the edge's ends link it.
  const owns = '财务团队负责阿波罗项目。';
  const leads = 'Zhang Min leads the finance team.';
  const hidden = 'Finance team escalations go to the board secretary.';

  beforeAll(async () => {
    const sourceId = await source('org-chart', 'Org chart sync');
    const edge = (text: string, from: string, relation: string, to: string, extra: Record<string, unknown> = {}) => {
      const [fromType, fromId] = from.split(':');
      const [toType, toId] = to.split(':');
      return write({
        kind: 'relational',
        content: { text, relation: { from: { type: fromType, id: fromId }, relation, to: { type: toType, id: toId } } },
        sourceEventIds: [sourceId],
        ...extra,
      });
    };
    for (const written of [
      await edge(approves, 'person:li-wei', 'approves', 'project:apollo'),
      await edge(owns, 'team:finance', 'owns', 'project:apollo'),
      await edge(leads, 'person:zhang-min', 'leads', 'team:finance'),
      await edge(hidden, 'team:finance', 'escalates_to', 'person:board-secretary', { sensitivity: 'restricted' }),
    ]) {
      expect(written.status, written.text).toBe(201);
    }
  });

  it('answers from the words alone without hops', async () => {
    const items = await recall('who approves project Apollo');
    expect(texts(items)).toContain(approves);
    expect(texts(items)).not.toContain(owns);
    expect(texts(items)).not.toContain(leads);
  });

  it('adds the edges one hop out, marked with their hop', async () => {
    const items = await recall('who approves project Apollo', { hops: 1 });
    expect(items.find((i) => i.text === owns)).toMatchObject({ kind: 'relational', hop: 1 });
    expect(items.find((i) => i.text === approves)?.hop).toBeUndefined();
    expect(texts(items)).not.toContain(leads);
  });

  it('adds the edges two hops out, but never one the caller may not read', async () => {
    const items = await recall('who approves project Apollo', { hops: 2 });
    expect(items.find((i) => i.text === owns)?.hop).toBe(1);
    expect(items.find((i) => i.text === leads)).toMatchObject({ kind: 'relational', hop: 2 });
    expect(texts(items)).not.toContain(hidden);
  });

  it('does the same over GraphQL, with the edge on the memory', async () => {
    const response = await call('agent', 'POST', '/graphql', {
      query: `query($input: RecallInput!) { recall(input: $input) { items { id text hop } } }`,
      variables: { input: { query: 'who approves project Apollo', purpose: 'support', hops: 2, budgetTokens: 2000 } },
    });
    expect(response.body.errors, response.text).toBeUndefined();
    const items: { id: string; text: string; hop: number | null }[] = response.body.data.recall.items;
    const reached = items.find((i) => i.text === leads)!;
    expect(reached.hop).toBe(2);
    const memory = await call('agent', 'POST', '/graphql', {
      query: `query($id: ID!) { memory(id: $id) { kind relation { from { type id } relation to { type id } } procedure { name } } }`,
      variables: { id: reached.id },
    });
    expect(memory.body.data.memory).toEqual({
      kind: 'relational',
      relation: { from: { type: 'person', id: 'zhang-min' }, relation: 'leads', to: { type: 'team', id: 'finance' } },
      procedure: null,
    });
  });
});

describe('GraphQL writes of the new kinds', () => {
  it('records a working memory and a procedure, and recalls the working one in its session', async () => {
    const sourceId = await source('cust-gql', 'Support chat opened');
    const mutation = `mutation($input: MemoryInput!) { writeMemory(input: $input) { duplicate memory { id kind session expiresAt procedure { name version steps conditions } } } }`;
    const working = await call('agent', 'POST', '/graphql', {
      query: mutation,
      variables: {
        input: {
          kind: 'working',
          content: { text: 'Caller asked about the Zanzibar voucher' },
          sourceEventIds: [sourceId],
          session: 'gql-1',
          ttlSeconds: 600,
        },
      },
    });
    expect(working.body.errors, working.text).toBeUndefined();
    expect(working.body.data.writeMemory.memory).toMatchObject({ kind: 'working', session: 'gql-1', procedure: null });
    expect(working.body.data.writeMemory.memory.expiresAt).not.toBeNull();

    const procedure = await call('agent', 'POST', '/graphql', {
      query: mutation,
      variables: {
        input: {
          kind: 'procedural',
          content: {
            text: 'Voucher reissue: verify identity, then reissue',
            procedure: { name: 'Voucher reissue', version: 1, steps: ['Verify identity', 'Reissue'] },
          },
          sourceEventIds: [sourceId],
        },
      },
    });
    expect(procedure.body.errors, procedure.text).toBeUndefined();
    expect(procedure.body.data.writeMemory.memory.procedure).toEqual({
      name: 'Voucher reissue',
      version: 1,
      steps: ['Verify identity', 'Reissue'],
      conditions: null,
    });

    const recalled = await call('agent', 'POST', '/graphql', {
      query: `query($input: RecallInput!) { recall(input: $input) { items { text } } }`,
      variables: { input: { query: 'Zanzibar voucher', purpose: 'support', session: 'gql-1', consistency: 'strong' } },
    });
    expect(recalled.body.data.recall.items.map((i: { text: string }) => i.text)).toContain('Caller asked about the Zanzibar voucher');
  });
});

describe('validation', () => {
  let sourceId: string;
  beforeAll(async () => {
    sourceId = await source('cust-validation', 'Validation notes');
  });

  it.each([
    [
      'a procedure without steps',
      { kind: 'procedural', content: { text: 'x', procedure: { name: 'Empty', version: 1, steps: [] } } },
      'content.procedure.steps',
    ],
    ['a procedural memory without a procedure', { kind: 'procedural', content: { text: 'x' } }, 'content.procedure'],
    ['a relational memory without an edge', { kind: 'relational', content: { text: 'x' } }, 'content.relation'],
    ['a working memory without a session', { kind: 'working', content: { text: 'x' } }, 'session'],
    [
      'a working memory kept longer than 7 days',
      { kind: 'working', content: { text: 'x' }, session: 's', ttlSeconds: 8 * 86_400 },
      'ttlSeconds',
    ],
    ['a session on a semantic memory', { kind: 'semantic', content: { text: 'x' }, session: 's' }, 'session'],
  ])('refuses %s as 422 problem+json naming the path', async (_, body, path) => {
    const response = await write({ ...body, sourceEventIds: [sourceId] });
    expect(response.status).toBe(422);
    expect(response.contentType).toContain('application/problem+json');
    expect(response.body.code).toBe('REQUEST.VALIDATION_FAILED');
    expect(response.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('refuses recall hops beyond 2', async () => {
    const response = await call('agent', 'POST', '/v1/recall', { query: 'x', purpose: 'support', hops: 3 });
    expect(response.status).toBe(422);
    expect(response.body.errors.map((e: { path: string }) => e.path)).toContain('hops');
  });
});
