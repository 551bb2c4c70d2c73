import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatEvent, startTestApp, type TestApp } from '../testing';
import { RedTeam, type ProbeResult, type Secret } from './harness';

/**
 * Red team: ids as oracles. A caller names an id it may not read (an event
 * above its clearance and outside its purposes, another session's working
 * memory) wherever an endpoint takes one; the answer must be exactly the
 * answer for an id that does not exist, and nothing of the record may come
 * back. Explicit memories citing a source, reads and promotions of working
 * memories, adjudication, over REST and GraphQL.
 */
let t: TestApp;
let red: RedTeam;
let writer: string;
let attacker: string;
let owner: string;
const marker = `oracle${Math.random().toString(36).slice(2, 10)}`;
const workingMarker = `working${Math.random().toString(36).slice(2, 10)}`;
let secretEvent: string;
let visibleEvent: string;
let workingId: string;
let secrets: Secret[];

/** A problem answer with what names the asked id (and the request id) blanked, to compare two answers' shapes. */
function shape(result: ProbeResult, ...ids: string[]): unknown {
  let text = result.text;
  for (const id of ids) text = text.replaceAll(id, '<id>');
  const body = JSON.parse(text);
  if (body && typeof body === 'object') delete body.requestId;
  return { status: result.status, body };
}

const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

beforeAll(async () => {
  t = await startTestApp();
  red = new RedTeam(t, 'oracles');
  writer = await red.token('acme', 'writer', { roles: ['agent'], purposes: ['support', 'hr'], clearance: 'restricted' });
  attacker = await red.token('acme', 'attacker', { roles: ['agent'], purposes: ['support'], clearance: 'internal' });
  owner = await t.token({ sub: 'cust-visible', roles: ['agent'], purposes: ['support'], clearance: 'internal' });
  const ingested = await red.send({
    token: writer,
    method: 'POST',
    path: '/v1/events',
    body: {
      events: [
        chatEvent(`vip-${marker}`, `Restricted HR note ${marker} about a grievance`, { sensitivity: 'restricted', purposes: ['hr'] }),
        chatEvent('cust-visible', 'Customer asked about the Orkney delivery window'),
      ],
    },
  });
  expect(ingested.status, ingested.text).toBe(202);
  [secretEvent, visibleEvent] = (JSON.parse(ingested.text) as { events: { id: string }[] }).events.map((e) => e.id);
  await strong();
  const working = await red.send({
    token: writer,
    method: 'POST',
    path: '/v1/memories',
    body: {
      kind: 'working',
      content: { text: `Scratch note ${workingMarker}: caller prefers mornings` },
      sourceEventIds: [visibleEvent],
      session: 'sess-writer',
      purposes: ['support'],
    },
  });
  expect(working.status, working.text).toBe(201);
  workingId = JSON.parse(working.text).memory.id;
  await strong();
  secrets = [
    { id: `mem_ep_${secretEvent}`, marker, label: 'restricted hr event' },
    // What a write citing the event would copy from it.
    { id: `mem_ep_${secretEvent}`, marker: 'restricted', label: 'the event sensitivity' },
    { id: `mem_ep_${secretEvent}`, marker: '"hr"', label: 'the event purposes' },
    { id: workingId, marker: workingMarker, label: 'another session working memory' },
  ];
}, 120_000);

afterAll(async () => {
  await (red ? red.close() : t?.close());
});

describe('an explicit memory citing a source the caller may not read', () => {
  const write = (sourceEventIds: string[], extra: Record<string, unknown> = {}) => ({
    token: attacker,
    method: 'POST',
    path: '/v1/memories',
    body: { content: { text: 'A summary of what I heard' }, sourceEventIds, ...extra },
  });

  it('is answered exactly like a source that does not exist, and copies nothing of it', async () => {
    for (let round = 0; round < 10; round++) {
      const missing = randomUUID();
      const cited = await red.probe('cite unreadable', write([secretEvent]), secrets);
      const absent = await red.probe('cite missing', write([missing]), secrets);
      expect(cited.status, cited.text).toBe(422);
      expect(JSON.parse(cited.text).code).toBe('MEMORY.UNKNOWN_SOURCE_EVENT');
      expect(shape(cited, secretEvent)).toEqual(shape(absent, missing));
      // Next to a readable source, and with the fields a caller might hope to have inherited.
      const mixed = await red.probe('cite readable + unreadable', write([visibleEvent, secretEvent], { subject: 'cust-visible' }), secrets);
      const mixedAbsent = await red.probe('cite readable + missing', write([visibleEvent, missing], { subject: 'cust-visible' }), secrets);
      expect(shape(mixed, secretEvent)).toEqual(shape(mixedAbsent, missing));
      const working = await red.probe(
        'cite unreadable (working)',
        write([secretEvent], { kind: 'working', session: 'sess-attacker' }),
        secrets,
      );
      expect(shape(working, secretEvent)).toEqual(
        shape(await red.probe('cite missing (working)', write([missing], { kind: 'working', session: 'sess-attacker' }), secrets), missing),
      );
    }
  });

  it('is the same over GraphQL', async () => {
    const mutation =
      'mutation($input: MemoryInput!) { writeMemory(input: $input) { memory { id subject purposes sensitivity provenance { parentIds } } } }';
    const missing = randomUUID();
    const cited = await red.probe(
      'graphql cite unreadable',
      {
        token: attacker,
        method: 'POST',
        path: '/graphql',
        body: { query: mutation, variables: { input: { content: { text: 'x' }, sourceEventIds: [secretEvent] } } },
      },
      secrets,
    );
    const absent = await red.probe(
      'graphql cite missing',
      {
        token: attacker,
        method: 'POST',
        path: '/graphql',
        body: { query: mutation, variables: { input: { content: { text: 'x' }, sourceEventIds: [missing] } } },
      },
      secrets,
    );
    expect(JSON.parse(cited.text).errors?.[0]?.extensions?.code, cited.text).toBe('MEMORY.UNKNOWN_SOURCE_EVENT');
    expect(shape(cited, secretEvent)).toEqual(shape(absent, missing));
  });

  it('still works for a source the caller may read, restricted ones included when the policy lets the caller read them', async () => {
    const own = await red.probe('cite readable', write([visibleEvent]), secrets);
    expect(own.status, own.text).toBe(201);
    // Restricted records are their owner's and the DPO's (default policy): the writer itself may not cite it, a DPO who writes may.
    expect(
      (
        await red.send({
          token: writer,
          method: 'POST',
          path: '/v1/memories',
          body: { content: { text: 'HR follow-up' }, sourceEventIds: [secretEvent], purposes: ['hr'] },
        })
      ).status,
    ).toBe(422);
    const dpo = await red.token('acme', 'dpo', { roles: ['agent', 'dpo'], purposes: ['hr'], clearance: 'restricted' });
    const both = await red.send({
      token: dpo,
      method: 'POST',
      path: '/v1/memories',
      body: { content: { text: 'HR follow-up' }, sourceEventIds: [secretEvent], purposes: ['hr'] },
    });
    expect(both.status, both.text).toBe(201);
    expect(JSON.parse(both.text).memory.policy.sensitivity).toBe('restricted');
  });
});

describe("another session's working memory", () => {
  const get = (token: string, query = '') => ({ token, method: 'GET', path: `/v1/memories/${workingId}${query}` });
  const promote = (token: string, body: Record<string, unknown> = {}) => ({
    token,
    method: 'POST',
    path: `/v1/memories/${workingId}/promote`,
    body,
  });

  it('cannot be read or promoted from another session or none, and is answered like an unknown id', async () => {
    const unknown = `mem_${randomUUID()}`;
    const absentGet = shape(await red.send({ token: attacker, method: 'GET', path: `/v1/memories/${unknown}` }), unknown);
    const absentPromote = shape(
      await red.send({ token: attacker, method: 'POST', path: `/v1/memories/${unknown}/promote`, body: {} }),
      unknown,
    );
    expect(absentGet).toMatchObject({ status: 404, body: { code: 'MEMORY.NOT_FOUND' } });
    for (let round = 0; round < 10; round++) {
      for (const [label, query] of [
        ['no session', ''],
        ['other session', '?session=sess-attacker'],
        ['purpose', '?purpose=support'],
      ] as const) {
        expect(shape(await red.probe(`get working, ${label}`, get(attacker, query), secrets), workingId), label).toEqual(absentGet);
      }
      expect(shape(await red.probe('promote working, no session', promote(attacker), secrets), workingId)).toEqual(absentPromote);
      expect(
        shape(await red.probe('promote working, other session', promote(attacker, { session: 'sess-attacker' }), secrets), workingId),
      ).toEqual(absentPromote);
      expect(
        shape(
          await red.probe('promote working as fact, other session', promote(attacker, { kind: 'semantic', session: 'sess-x' }), secrets),
          workingId,
        ),
      ).toEqual(absentPromote);
      // The writer too needs the session: the binding is to the session, not the token.
      expect(shape(await red.probe('get working, writer without session', get(writer), secrets), workingId)).toEqual(absentGet);
    }
    const graphqlGet = await red.probe(
      'graphql get working',
      {
        token: attacker,
        method: 'POST',
        path: '/graphql',
        body: { query: `{ memory(id: "${workingId}", session: "sess-attacker") { id text } }` },
      },
      secrets,
    );
    expect(JSON.parse(graphqlGet.text).errors?.[0]?.extensions?.code).toBe('MEMORY.NOT_FOUND');
    const graphqlPromote = await red.probe(
      'graphql promote working',
      {
        token: attacker,
        method: 'POST',
        path: '/graphql',
        body: { query: `mutation { promoteMemory(id: "${workingId}") { memory { id text } } }` },
      },
      secrets,
    );
    expect(JSON.parse(graphqlPromote.text).errors?.[0]?.extensions?.code).toBe('MEMORY.NOT_FOUND');
    // Nothing was promoted: no one recalls it outside its session.
    await strong();
    for (const token of [attacker, writer]) {
      const recalled = await red.probe(
        'recall after promotion attempts',
        { token, method: 'POST', path: '/v1/recall', body: { query: `Scratch note ${workingMarker} mornings`, purpose: 'support' } },
        secrets,
      );
      expect(recalled.status).toBe(200);
    }
  });

  it('is read and promoted in its own session, and read by its owner', async () => {
    const inSession = await red.send(get(attacker, '?session=sess-writer'));
    expect(inSession.status, inSession.text).toBe(200);
    expect((await red.send(get(owner))).status).toBe(200);
    const graphql = await red.send({
      token: writer,
      method: 'POST',
      path: '/graphql',
      body: { query: `{ memory(id: "${workingId}", session: "sess-writer") { id } }` },
    });
    expect(JSON.parse(graphql.text).data.memory.id).toBe(workingId);
    const promoted = await red.send(promote(writer, { session: 'sess-writer' }));
    expect(promoted.status, promoted.text).toBe(201);
    expect(JSON.parse(promoted.text).memory.provenance.parentIds).toEqual([workingId]);
  });
});

describe('adjudicating a fact the caller may not read', () => {
  const factMarker = `fact${Math.random().toString(36).slice(2, 10)}`;
  let hidden: string;
  let open: string;
  let reviewer: string;

  beforeAll(async () => {
    reviewer = await red.token('acme', 'reviewer', { roles: ['reviewer'], purposes: ['support'], clearance: 'internal' });
    const fact = (value: string, sensitivity: string) => ({
      content: { text: `Orkney depot manager: ${value}`, fact: { entity: 'Orkney depot', attribute: 'manager', value } },
      sourceEventIds: [visibleEvent],
      purposes: ['support'],
      sensitivity,
    });
    // Two contradicting facts: one the reviewer may read, one above its clearance.
    const written = [
      await red.send({ token: writer, method: 'POST', path: '/v1/memories', body: fact(`Ann ${factMarker}`, 'confidential') }),
    ];
    written.push(await red.send({ token: writer, method: 'POST', path: '/v1/memories', body: fact('Bob', 'internal') }));
    for (const w of written) expect(w.status, w.text).toBe(201);
    [hidden, open] = written.map((w) => JSON.parse(w.text).memory.id);
    await strong();
  });

  it('is answered like an unknown id, and a decision on a visible fact settles nothing hidden', async () => {
    const hiddenSecret = [{ id: hidden, marker: factMarker, label: 'confidential fact' }];
    const unknown = `mem_${randomUUID()}`;
    const absent = shape(
      await red.send({ token: reviewer, method: 'POST', path: `/v1/memories/${unknown}/adjudicate`, body: { decision: 'accept' } }),
      unknown,
    );
    expect(absent).toMatchObject({ status: 404, body: { code: 'MEMORY.NOT_FOUND' } });
    for (const decision of ['accept', 'reject']) {
      const probed = await red.probe(
        `adjudicate hidden (${decision})`,
        { token: reviewer, method: 'POST', path: `/v1/memories/${hidden}/adjudicate`, body: { decision } },
        hiddenSecret,
      );
      expect(shape(probed, hidden)).toEqual(absent);
    }
    const decided = await red.probe(
      'adjudicate visible',
      { token: reviewer, method: 'POST', path: `/v1/memories/${open}/adjudicate`, body: { decision: 'accept' } },
      hiddenSecret,
    );
    expect(decided.status, decided.text).toBe(200);
    expect(JSON.parse(decided.text).revised.map((r: { id: string }) => r.id)).toEqual([open]);
  });
});

describe('a new version of a procedure whose earlier version the caller may not read', () => {
  it('does not name the earlier version', async () => {
    const procedureMarker = `proc${Math.random().toString(36).slice(2, 10)}`;
    const procedure = (version: number) => ({ name: 'Grievance escalation', version, steps: ['Log it', 'Tell the HR lead'] });
    const first = await red.send({
      token: writer,
      method: 'POST',
      path: '/v1/memories',
      body: {
        kind: 'procedural',
        content: { text: `Grievance escalation ${procedureMarker}`, procedure: procedure(1) },
        sourceEventIds: [visibleEvent],
        sensitivity: 'restricted',
      },
    });
    expect(first.status, first.text).toBe(201);
    const hidden = [{ id: JSON.parse(first.text).memory.id as string, marker: procedureMarker, label: 'restricted procedure v1' }];
    const second = await red.probe(
      'procedure over a hidden version',
      {
        token: attacker,
        method: 'POST',
        path: '/v1/memories',
        body: {
          kind: 'procedural',
          content: { text: 'Grievance escalation, support edition', procedure: procedure(2) },
          sourceEventIds: [visibleEvent],
        },
      },
      hidden,
    );
    expect(second.status, second.text).toBe(201);
    expect(JSON.parse(second.text).superseded).toBeUndefined();
  });
});

describe("feedback on another caller's recall", () => {
  it('is answered like an unknown recall id', async () => {
    const recalled = await red.send({
      token: writer,
      method: 'POST',
      path: '/v1/recall',
      body: { query: 'Orkney delivery window', purpose: 'support' },
    });
    const { recallId, items } = JSON.parse(recalled.text) as { recallId: string; items: { id: string }[] };
    expect(items.length).toBeGreaterThan(0);
    const unknown = `rcl_${randomUUID()}`;
    const absent = shape(
      await red.send({ token: attacker, method: 'POST', path: `/v1/recall/${unknown}/feedback`, body: { adopted: [items[0].id] } }),
      unknown,
    );
    expect(absent).toMatchObject({ status: 404, body: { code: 'RECALL.NOT_FOUND' } });
    const probed = await red.probe(
      'feedback on another recall',
      { token: attacker, method: 'POST', path: `/v1/recall/${recallId}/feedback`, body: { adopted: [items[0].id] } },
      secrets,
    );
    expect(shape(probed, recallId)).toEqual(absent);
  });
});

describe('the red team tally', () => {
  it('shows no leak and no 5xx', () => {
    expect(red.leaks).toEqual([]);
    expect(red.serverErrors).toEqual([]);
  });
});
