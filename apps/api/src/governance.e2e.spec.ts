import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { chatEvent, dataEventCount, startTestApp, type Json, type TestApp } from './testing';

/** A clock the test can move, so retention can be seen to expire. */
const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) };

let t: TestApp;
const tokens: Record<string, string> = {};
const as = (who: string) => tokens[who];

async function call(who: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${t.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${as(who)}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json: Json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, text, body: json };
}

const event = chatEvent;
const dataEvents = () => dataEventCount(t.elma, 'acme');

const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());
const recallTexts = async (who: string, query: string, purpose = 'support') => {
  await strong();
  const response = await call(who, 'POST', '/v1/recall', { query, purpose, budgetTokens: 2000 });
  expect(response.status, response.text).toBe(200);
  return (response.body.items as { text: string }[]).map((i) => i.text);
};

beforeAll(async () => {
  t = await startTestApp({ clock });
  const mint = (sub: string, claims: Partial<Principal>) => t.token({ sub, ...claims });
  tokens.agent = await mint('agent-1', { roles: ['agent'], purposes: ['support'], clearance: 'confidential' });
  tokens.reviewer = await mint('manager-1', { roles: ['agent'], purposes: ['performance_review'], clearance: 'confidential' });
  tokens.admin = await mint('admin-1', { roles: ['admin'], purposes: ['support'], clearance: 'restricted' });
  tokens.legal = await mint('legal-1', { roles: ['legal'], purposes: ['support'], clearance: 'restricted' });
  tokens.auditor = await mint('auditor-1', { roles: ['auditor'], purposes: [], clearance: 'internal' });
  tokens.owner = await mint('cust-owner', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
});
afterAll(async () => t?.close());

describe('policy as data', () => {
  it('lets only admin read or change the policy, and versions each change', async () => {
    expect((await call('agent', 'GET', '/v1/policy')).body.code).toBe('AUTH.FORBIDDEN');
    const current = await call('admin', 'GET', '/v1/policy');
    expect(current.status).toBe(200);
    const { version, ...document } = current.body;
    const changed = await call('admin', 'PUT', `/v1/policy?expectedVersion=${version}`, document);
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.version).toBe(version + 1);
    const stale = await call('admin', 'PUT', `/v1/policy?expectedVersion=${version}`, document);
    expect(stale.status).toBe(409);
  });

  it('keeps a record written for support out of performance_review until policy allows it', async () => {
    await call('agent', 'POST', '/v1/events', event('emp-7', 'Employee seven complained about overtime in the support queue'));
    expect(await recallTexts('reviewer', 'overtime complained', 'performance_review')).toEqual([]);

    const { version, ...document } = (await call('admin', 'GET', '/v1/policy')).body;
    document.rules.push({
      id: 'reviews-may-use-support-notes',
      operations: ['read'],
      when: { purposes: ['performance_review'], crossPurpose: true, maxSensitivity: 'internal' },
    });
    expect((await call('admin', 'PUT', `/v1/policy?expectedVersion=${version}`, document)).status).toBe(200);
    expect(await recallTexts('reviewer', 'overtime complained', 'performance_review')).toContain(
      'Employee seven complained about overtime in the support queue',
    );
  });

  it('lets only the owner (or dpo/legal) read a restricted record', async () => {
    const written = await call(
      'owner',
      'POST',
      '/v1/events',
      event('cust-owner', 'Private arrangement about my bonus plan', { sensitivity: 'restricted' }),
    );
    expect(written.status, written.text).toBe(202);
    const id = `mem_ep_${written.body.events[0].id}`;
    await strong();
    expect((await call('owner', 'GET', `/v1/memories/${id}`)).status).toBe(200);
    expect((await call('admin', 'GET', `/v1/memories/${id}`)).status).toBe(404);
    expect(await recallTexts('admin', 'bonus plan arrangement')).not.toContain('Private arrangement about my bonus plan');
  });
});

describe('ingest hygiene', () => {
  it('rejects a secret with HYGIENE.SECRET_DETECTED, naming kind and path but not the secret, and writes nothing', async () => {
    const head = await dataEvents();
    const key = ['AKIA', 'IOSFODNN7EXAMPLE'].join('');
    const response = await call('agent', 'POST', '/v1/events', { events: [event('c1', 'fine'), event('c1', `deploy with ${key} today`)] });
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('HYGIENE.SECRET_DETECTED');
    expect(response.body.errors).toEqual([{ kind: 'api_key', path: 'events.1.content.text' }]);
    expect(response.text).not.toContain(key);
    expect(await dataEvents()).toBe(head);
  });

  it('redacts to a keyed fingerprint when the tenant policy says so, and raises sensitivity', async () => {
    const { version, ...document } = (await call('admin', 'GET', '/v1/policy')).body;
    expect((await call('admin', 'PUT', `/v1/policy?expectedVersion=${version}`, { ...document, secrets: { mode: 'redact' } })).status).toBe(
      200,
    );
    const card = '4111 1111 1111 1111';
    const response = await call(
      'agent',
      'POST',
      '/v1/events',
      event('c2', `customer paid with card ${card} yesterday`, { sensitivity: 'public' }),
    );
    expect(response.status, response.text).toBe(202);
    await strong();
    // Restricted now: readable by legal (and the DPO), not by the agent who wrote it.
    expect((await call('agent', 'GET', `/v1/memories/mem_ep_${response.body.events[0].id}`)).status).toBe(404);
    const memory = await call('legal', 'GET', `/v1/memories/mem_ep_${response.body.events[0].id}`);
    expect(memory.status, memory.text).toBe(200);
    expect(memory.body.content.text).toMatch(/customer paid with card \[REDACTED:payment_card:[0-9a-f]{12}\] yesterday/);
    expect(memory.text).not.toContain(card);
    expect(memory.body.policy.sensitivity).toBe('restricted');
    const { version: v2, ...doc2 } = (await call('admin', 'GET', '/v1/policy')).body;
    await call('admin', 'PUT', `/v1/policy?expectedVersion=${v2}`, { ...doc2, secrets: { mode: 'reject' } });
  });

  it('never lowers sensitivity below what the rules find', async () => {
    const response = await call('agent', 'POST', '/v1/events', event('c3', 'reach me at jane.doe@example.com', { sensitivity: 'public' }));
    await strong();
    const memory = await call('agent', 'GET', `/v1/memories/mem_ep_${response.body.events[0].id}`);
    expect(memory.body.policy.sensitivity).toBe('confidential');
  });

  it('trusts registered authoritative sources, taints external content, and passes taint on', async () => {
    const { version, ...document } = (await call('admin', 'GET', '/v1/policy')).body;
    await call('admin', 'PUT', `/v1/policy?expectedVersion=${version}`, { ...document, authoritativeSources: ['sap'] });
    const sap = await call(
      'agent',
      'POST',
      '/v1/events',
      event('c4', 'Invoice 991 is paid', { source: { system: 'sap', channel: 'system' } }),
    );
    const web = await call(
      'agent',
      'POST',
      '/v1/events',
      event('c4', 'A blog says ACME is for sale', { source: { system: 'crawler', channel: 'web' } }),
    );
    await strong();
    expect((await call('agent', 'GET', `/v1/memories/mem_ep_${sap.body.events[0].id}`)).body).toMatchObject({
      sourceTrust: 'authoritative',
      tainted: false,
    });
    expect((await call('agent', 'GET', `/v1/memories/mem_ep_${web.body.events[0].id}`)).body).toMatchObject({
      sourceTrust: 'external',
      tainted: true,
    });
    const derived = await call('agent', 'POST', '/v1/memories', {
      content: { text: 'ACME may be sold' },
      sourceEventIds: [web.body.events[0].id, sap.body.events[0].id],
    });
    expect(derived.status, derived.text).toBe(201);
    expect(derived.body.memory.tainted).toBe(true);
  });
});

describe('retention and legal hold', () => {
  it('stops recalling a session record once it expires, before any sweep', async () => {
    await call('agent', 'POST', '/v1/events', event('c5', 'Temporary note about the kiwi pilot', { retention: 'session' }));
    expect(await recallTexts('agent', 'kiwi pilot')).toContain('Temporary note about the kiwi pilot');
    clock.offsetMs = 2 * 86_400_000;
    try {
      expect(await recallTexts('agent', 'kiwi pilot')).not.toContain('Temporary note about the kiwi pilot');
    } finally {
      clock.offsetMs = 0;
    }
  });

  it('withholds held records from recall except for legal, and only legal places or releases holds', async () => {
    await call('agent', 'POST', '/v1/events', event('cust-held', 'Dispute about the mango contract penalties'));
    expect(await recallTexts('agent', 'mango contract penalties')).toContain('Dispute about the mango contract penalties');

    expect((await call('agent', 'POST', '/v1/legal-holds', { scope: { subjects: ['cust-held'] }, reason: 'matter 42' })).status).toBe(403);
    const hold = await call('legal', 'POST', '/v1/legal-holds', { scope: { subjects: ['cust-held'] }, reason: 'matter 42' });
    expect(hold.status, hold.text).toBe(201);
    expect(await recallTexts('agent', 'mango contract penalties')).not.toContain('Dispute about the mango contract penalties');
    expect(await recallTexts('legal', 'mango contract penalties')).toContain('Dispute about the mango contract penalties');

    expect((await call('legal', 'DELETE', `/v1/legal-holds/${hold.body.id}`)).status).toBe(204);
    expect(await recallTexts('agent', 'mango contract penalties')).toContain('Dispute about the mango contract penalties');
  });
});

describe('audit', () => {
  it('records reads, writes, denials and policy changes with ids only, exports NDJSON to auditors, and verifies', async () => {
    const marker = 'papaya-audit-marker';
    const written = await call('agent', 'POST', '/v1/events', event('c6', `Note ${marker}`));
    await recallTexts('agent', marker);
    const graphql = await call('agent', 'POST', '/graphql', {
      query: `{ recall(input: {query: "${marker}", purpose: "support"}) { items { id } } }`,
    });
    expect(graphql.body.errors).toBeUndefined();
    expect((await call('agent', 'GET', '/v1/audit')).status).toBe(403);

    const exported = await call('auditor', 'GET', '/v1/audit');
    expect(exported.status).toBe(200);
    const entries = exported.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(exported.text).not.toContain(marker);
    const ops = new Set(entries.map((e: { operation: string }) => e.operation));
    expect([...ops]).toEqual(expect.arrayContaining(['read', 'write', 'administer']));
    expect(entries.some((e: { decision: { effect: string } }) => e.decision.effect === 'deny')).toBe(true);
    expect(entries.some((e: { resourceIds: string[] }) => e.resourceIds.includes(written.body.events[0].id))).toBe(true);
    entries.forEach((e: { seq: number }, i: number) => expect(e.seq).toBe(i));
    // Every entry, GraphQL ones included, names the HTTP request it came from.
    expect(entries.filter((e: { requestId: string }) => !e.requestId.startsWith('req-'))).toEqual([]);

    const writes = await call('auditor', 'GET', '/v1/audit?operation=write&actor=agent-1');
    expect(
      writes.text
        .trim()
        .split('\n')
        .every((l) => JSON.parse(l).operation === 'write'),
    ).toBe(true);

    const verified = await call('auditor', 'POST', '/v1/audit/verify');
    expect(verified.status).toBe(200);
    expect(verified.body.ok).toBe(true);
  });
});
