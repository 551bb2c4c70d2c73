import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deterministicUuid } from '@elma/shared';
import { chatEvent, startTestApp, type TestApp } from '../testing';
import { RedTeam, pool, type Secret } from './harness';

/**
 * Red team: the identity of what is written. An agent of the same tenant
 * reuses other subjects' idempotency keys, guesses event ids from public
 * input, and sends erased content again under other subject ids. Nothing of
 * the first writer may be overwritten, revealed or lost.
 */
const VICTIMS = 16;

let t: TestApp;
let red: RedTeam;
const victims: (Secret & { subject: string; key: string; text: string })[] = [];

const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

async function settle(token: string, id: string) {
  for (let i = 0; i < 600; i++) {
    const progress = await red.send({ token, method: 'GET', path: `/v1/erasures/${id}` });
    const status = JSON.parse(progress.text).status as string;
    if (['completed', 'denied', 'approval_timed_out', 'verification_failed', 'failed'].includes(status)) return status;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`erasure ${id} did not settle`);
}

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  red = new RedTeam(t, 'identity');
  const writer = await red.token('acme', 'writer', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
  for (let i = 0; i < VICTIMS; i++) {
    const marker = `idvictim${i}x${Math.random().toString(36).slice(2, 8)}`;
    const text = i % 2 === 0 ? `客户 ${marker} 的保险箱密码是七二九` : `Customer ${marker} keeps the safe code in the red folder`;
    victims.push({ id: '', marker, subject: `victim-${i}`, key: `crm-turn-${i}`, text, label: `victim ${i}` });
  }
  const written = await red.send({
    token: writer,
    method: 'POST',
    path: '/v1/events',
    body: { events: victims.map((v) => chatEvent(v.subject, v.text, { idempotencyKey: v.key })) },
  });
  expect(written.status, written.text).toBe(202);
  (JSON.parse(written.text).events as { id: string }[]).forEach((e, i) => (victims[i].id = e.id));
  await strong();
}, 120_000);

afterAll(async () => {
  await (red ? red.close() : t?.close());
});

describe('red team: identity of what is written', () => {
  it('reusing another subject’s idempotency key is refused (409) and the first record stays intact', async () => {
    const attacker = await red.token('acme', 'attacker', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
    const attempts = victims.flatMap((v, i) => [
      { label: `key reuse, other subject #${i}`, body: chatEvent(`attacker-${i}`, `overwrite attempt ${i}`, { idempotencyKey: v.key }) },
      {
        label: `key reuse, same subject other content #${i}`,
        body: chatEvent(v.subject, `the record now says nothing ${i}`, { idempotencyKey: v.key }),
      },
      { label: `key reuse, same text other subject #${i}`, body: chatEvent(`attacker-${i}`, v.text, { idempotencyKey: v.key }) },
      { label: `key reuse, other purpose #${i}`, body: chatEvent(v.subject, v.text, { idempotencyKey: v.key, purposes: ['marketing'] }) },
      {
        label: `key reuse inside a batch #${i}`,
        body: {
          events: [chatEvent('bystander', `harmless ${i}`), chatEvent(`attacker-${i}`, `batch overwrite ${i}`, { idempotencyKey: v.key })],
        },
      },
    ]);
    await pool(attempts, 4, async ({ label, body }) => {
      const result = await red.probe(label, { token: attacker, method: 'POST', path: '/v1/events', body }, victims);
      expect(result.status, `${label}: ${result.text}`).toBe(409);
      expect(JSON.parse(result.text).code).toBe('MEMORY.ALREADY_RECORDED');
    });
    // The same through GraphQL: the error carries the same stable code, and nothing of the victim.
    for (const [i, v] of victims.entries()) {
      const result = await red.probe(
        `key reuse over GraphQL #${i}`,
        {
          token: attacker,
          method: 'POST',
          path: '/graphql',
          body: {
            query: 'mutation($events: [EventInput!]!) { ingestEvents(events: $events) { events { id subject duplicate } } }',
            variables: { events: [chatEvent(`gql-attacker-${i}`, `graphql overwrite ${i}`, { idempotencyKey: v.key })] },
          },
        },
        victims,
      );
      const answer = JSON.parse(result.text);
      expect(answer.data?.ingestEvents ?? null, result.text).toBeNull();
      expect(answer.errors[0].extensions.code).toBe('MEMORY.ALREADY_RECORDED');
    }
    const writer = await red.token('acme', 'writer', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
    for (const v of victims) {
      const record = await red.send({ token: writer, method: 'GET', path: `/v1/memories/mem_ep_${v.id}` });
      expect(record.status, record.text).toBe(200);
      expect(JSON.parse(record.text).subject).toBe(v.subject);
      expect(record.text).toContain(v.marker);
    }
    // Nothing of the refused batches was written either.
    const bystander = await red.send({
      token: writer,
      method: 'POST',
      path: '/v1/recall',
      body: { query: 'harmless', purpose: 'support', budgetTokens: 2000 },
    });
    expect(bystander.text).not.toMatch(/harmless \d/);
  });

  it('event ids cannot be guessed from the tenant and the idempotency key', async () => {
    const attacker = await red.token('acme', 'attacker', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
    for (const [i, v] of victims.entries()) {
      const guess = deterministicUuid('acme', v.key);
      expect(guess).not.toBe(v.id);
      const byId = await red.probe(
        `guessed memory id #${i}`,
        { token: attacker, method: 'GET', path: `/v1/memories/mem_ep_${guess}` },
        victims,
      );
      expect(byId.status).toBe(404);
      const cited = await red.probe(
        `guessed source event #${i}`,
        {
          token: attacker,
          method: 'POST',
          path: '/v1/memories',
          body: { kind: 'semantic', content: { text: `built on a guess ${i}` }, sourceEventIds: [guess], purposes: ['support'] },
        },
        victims,
      );
      expect(cited.status).toBe(422);
    }
    // The same key in another tenant is another event with another id.
    const outsider = await red.token('globex', 'outsider', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
    for (const [i, v] of victims.slice(0, 4).entries()) {
      const result = await red.probe(
        `same key in another tenant #${i}`,
        { token: outsider, method: 'POST', path: '/v1/events', body: chatEvent(v.subject, `globex note ${i}`, { idempotencyKey: v.key }) },
        victims,
      );
      expect(result.status, result.text).toBe(202);
    }
  });

  it('erased content sent again under another subject id is refused where the tenant scopes tombstones to the tenant', async () => {
    const admin = await red.token('initech', 'admin', { roles: ['admin'], purposes: ['support'], clearance: 'restricted' });
    const writer = await red.token('initech', 'writer', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
    const dpo = await red.token('initech', 'dpo', { roles: ['dpo'], purposes: ['support'], clearance: 'restricted' });
    const policy = JSON.parse((await red.send({ token: admin, method: 'GET', path: '/v1/policy' })).text);
    const { version, ...document } = policy;
    const put = await red.send({
      token: admin,
      method: 'PUT',
      path: `/v1/policy?expectedVersion=${version}`,
      body: { ...document, erasure: { ...document.erasure, tombstoneScope: 'tenant' } },
    });
    expect(put.status, put.text).toBe(200);

    const erased = ['Quinn Abernathy routes her pension letters to the PO box in Dunmore', '许敏把备用钥匙放在楼下第三个信箱里'];
    for (const text of erased)
      expect((await red.send({ token: writer, method: 'POST', path: '/v1/events', body: chatEvent('subject-q', text) })).status).toBe(202);
    await strong();
    const request = await red.send({
      token: dpo,
      method: 'POST',
      path: '/v1/erasures',
      body: { scope: { type: 'subject', subject: 'subject-q' }, reason: 'subject_request' },
    });
    expect(request.status, request.text).toBe(202);
    expect(await settle(dpo, JSON.parse(request.text).requestId)).toBe('completed');

    const variants = erased.flatMap((text, i) => [
      { subject: `subject-q2-${i}`, text },
      { subject: `subject-q3-${i}`, text: `  ${text.toUpperCase()}  ` },
      { subject: 'subject-q', text },
      { subject: `subject-q4-${i}`, text, source: { system: 'backup-restore', channel: 'email' } },
    ]);
    for (const [i, v] of variants.entries()) {
      const body = chatEvent(v.subject, v.text, v.source ? { source: v.source } : {});
      const result = await red.probe(`erased content resent #${i}`, { token: writer, method: 'POST', path: '/v1/events', body });
      expect(result.status, result.text).toBe(409);
      expect(JSON.parse(result.text).code).toBe('ERASURE.CONTENT_ERASED');
      expect(result.text).not.toContain(v.text.trim());
    }
  });

  it('finds no leak and no server error', () => {
    expect(red.probes).toBeGreaterThanOrEqual(100);
    expect(red.leaks).toEqual([]);
    expect(red.serverErrors).toEqual([]);
  });
});
