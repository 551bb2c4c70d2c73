import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyShredded, type Principal } from '@elma/domain';
import { ErasureStore } from '@elma/application';
import { deterministicUuid } from '@elma/shared';
import { callApi, changePolicy, chatEvent, dataEventCount, roleTokens, startTestApp, type Json, type TestApp } from './testing';

let t: TestApp;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

async function recallTexts(query: string) {
  await strong();
  const response = await call('agent', 'POST', '/v1/recall', { query, purpose: 'support', budgetTokens: 4000 });
  expect(response.status, response.text).toBe(200);
  return (response.body.items as { text: string }[]).map((i) => i.text);
}

async function settle(id: string) {
  for (let i = 0; i < 600; i++) {
    const progress = await call('compliance', 'GET', `/v1/erasures/${id}`);
    expect(progress.status, progress.text).toBe(200);
    if (['completed', 'denied', 'approval_timed_out', 'verification_failed', 'failed'].includes(progress.body.status)) return progress.body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`erasure ${id} did not settle`);
}

async function erase(subject: string) {
  const response = await call('compliance', 'POST', '/v1/erasures', { scope: { type: 'subject', subject }, reason: 'subject_request' });
  expect(response.status, response.text).toBe(202);
  return response.body.requestId as string;
}

const setPolicy = (change: (policy: Json) => void) => changePolicy(t.url, tokens.admin, change);

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  Object.assign(tokens, await roleTokens(t, ['agent', 'compliance', 'admin']));
}, 120_000);
afterAll(async () => t?.close());

describe('the identity of an ingested event', () => {
  it('is not computable from the tenant and the idempotency key', async () => {
    const response = await call(
      'agent',
      'POST',
      '/v1/events',
      chatEvent('cust-1', 'Alma likes the north entrance', { idempotencyKey: 'turn-0001' }),
    );
    expect(response.status, response.text).toBe(202);
    const { id } = response.body.events[0];
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(id).not.toBe(deterministicUuid('acme', 'turn-0001'));
  });

  it('a retry with the same key, subject and content is a duplicate that writes nothing', async () => {
    const event = chatEvent('cust-2', 'Bram asked for a callback on Tuesday', { idempotencyKey: 'turn-0002' });
    const first = await call('agent', 'POST', '/v1/events', event);
    expect(first.status, first.text).toBe(202);
    expect(first.body.events[0].duplicate).toBe(false);
    await strong();
    const before = await dataEventCount(t.elma, 'acme');
    const again = await call('agent', 'POST', '/v1/events', event);
    expect(again.status, again.text).toBe(202);
    expect(again.body.events[0]).toEqual({ ...first.body.events[0], duplicate: true });
    expect(await dataEventCount(t.elma, 'acme')).toBe(before);
  });

  it('the same key with other content is 409 MEMORY.ALREADY_RECORDED, and the first event is untouched', async () => {
    const first = await call(
      'agent',
      'POST',
      '/v1/events',
      chatEvent('cust-3', 'Cato ordered twelve blue crates', { idempotencyKey: 'turn-0003' }),
    );
    expect(first.status).toBe(202);
    await strong();
    const before = await dataEventCount(t.elma, 'acme');
    const changed = await call(
      'agent',
      'POST',
      '/v1/events',
      chatEvent('cust-3', 'Cato cancelled the crates', { idempotencyKey: 'turn-0003' }),
    );
    expect(changed.status).toBe(409);
    expect(changed.contentType).toContain('application/problem+json');
    expect(changed.body.code).toBe('MEMORY.ALREADY_RECORDED');
    expect(changed.text).not.toContain(first.body.events[0].id);
    expect(changed.text).not.toContain('Cato');
    expect(await dataEventCount(t.elma, 'acme')).toBe(before);
    expect(await recallTexts('Cato twelve blue crates')).toContain('Cato ordered twelve blue crates');
  });

  it('a batch reusing a key for another subject is refused whole, naming the path', async () => {
    await strong();
    const before = await dataEventCount(t.elma, 'acme');
    const batch = await call('agent', 'POST', '/v1/events', {
      events: [
        chatEvent('cust-4', 'Dara is new and fine', { idempotencyKey: 'turn-0004' }),
        chatEvent('cust-5', 'Ezra reuses a key', { idempotencyKey: 'turn-0003' }),
      ],
    });
    expect(batch.status).toBe(409);
    expect(batch.body.code).toBe('MEMORY.ALREADY_RECORDED');
    expect(batch.body.path ?? batch.body.details?.path ?? batch.text).toContain('events.1.idempotencyKey');
    const inside = await call('agent', 'POST', '/v1/events', {
      events: [
        chatEvent('cust-4', 'Dara once', { idempotencyKey: 'turn-0005' }),
        chatEvent('cust-4', 'Dara twice', { idempotencyKey: 'turn-0005' }),
      ],
    });
    expect(inside.status).toBe(409);
    expect(await dataEventCount(t.elma, 'acme')).toBe(before);
  });

  it('of concurrent writers with one key, exactly one wins', async () => {
    const racers = Array.from({ length: 8 }, (_, i) =>
      call('agent', 'POST', '/v1/events', chatEvent(`racer-${i}`, `racer ${i} claims the key`, { idempotencyKey: 'turn-race' })),
    );
    const answers = await Promise.all(racers);
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409 && a.body.code === 'MEMORY.ALREADY_RECORDED')).toHaveLength(7);

    const same = chatEvent('racer-same', 'the very same event sent eight times at once', { idempotencyKey: 'turn-race-same' });
    const retries = await Promise.all(Array.from({ length: 8 }, () => call('agent', 'POST', '/v1/events', same)));
    expect(retries.map((r) => r.status)).toEqual(Array(8).fill(202));
    expect(new Set(retries.map((r) => r.body.events[0].id)).size).toBe(1);
    expect(retries.filter((r) => r.body.events[0].duplicate === false)).toHaveLength(1);
  });

  it('reusing a key for a second subject and erasing that subject leaves the first one readable', async () => {
    const victim = 'Farah Oyelaran keeps her allotment shed padlocked with code four four nine';
    const first = await call('agent', 'POST', '/v1/events', chatEvent('cust-victim', victim, { idempotencyKey: 'shared-key-1' }));
    expect(first.status, first.text).toBe(202);
    await strong();
    const hijack = await call(
      'agent',
      'POST',
      '/v1/events',
      chatEvent('cust-attacker', 'an attacker writes over the key', { idempotencyKey: 'shared-key-1' }),
    );
    expect((await call('agent', 'POST', '/v1/events', chatEvent('cust-attacker', 'the attacker has one record of their own'))).status).toBe(
      202,
    );
    await strong();
    expect((await settle(await erase('cust-attacker'))).status).toBe('completed');
    // The victim's text survives the attacker's erasure, under the id it was given.
    expect(await recallTexts('Farah Oyelaran allotment shed padlocked')).toContain(victim);
    const memory = await call('agent', 'GET', `/v1/memories/mem_ep_${first.body.events[0].id}`);
    expect(memory.status, memory.text).toBe(200);
    expect(memory.text).toContain('Farah');
    expect(hijack.status).toBe(409);
    expect(hijack.body.code).toBe('MEMORY.ALREADY_RECORDED');
  });

  it('a key whose event was erased stays used: another event under it is refused', async () => {
    const first = await call(
      'agent',
      'POST',
      '/v1/events',
      chatEvent('cust-gone', 'Gus will be forgotten', { idempotencyKey: 'erased-key' }),
    );
    expect(first.status).toBe(202);
    await strong();
    expect((await settle(await erase('cust-gone'))).status).toBe('completed');
    const reuse = await call(
      'agent',
      'POST',
      '/v1/events',
      chatEvent('cust-new', 'someone else under the erased key', { idempotencyKey: 'erased-key' }),
    );
    expect(reuse.status).toBe(409);
    expect(reuse.body.code).toBe('MEMORY.ALREADY_RECORDED');
  });
});

describe('the identity of an explicit memory', () => {
  it('is not computable from the tenant and the idempotency key, and another writer’s key never collides with it', async () => {
    const [source] = (await call('agent', 'POST', '/v1/events', chatEvent('cust-m1', 'Ines confirmed the renewal terms'))).body.events as {
      id: string;
    }[];
    const note = (text: string) => ({ content: { text }, sourceEventIds: [source.id], idempotencyKey: 'renewal-note' });
    const first = await call('agent', 'POST', '/v1/memories', note('Renewal terms confirmed'));
    expect(first.status, first.text).toBe(201);
    expect(first.body.memory.id).not.toBe(`mem_${deterministicUuid('acme', 'memory', 'renewal-note')}`);
    const retry = await call('agent', 'POST', '/v1/memories', note('Renewal terms confirmed'));
    expect(retry.body.memory.id).toBe(first.body.memory.id);
    // Another writer choosing the same key learns nothing of the first memory: its write is its own.
    tokens.other = await t.token({ sub: 'agent-2', roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
    const other = await call('other', 'POST', '/v1/memories', note('Something else entirely'));
    expect(other.status, other.text).toBe(201);
    expect(other.body.memory.id).not.toBe(first.body.memory.id);
  });
});

describe('erased content sent again', () => {
  it('under another subject is accepted by default (tombstones are per subject)', async () => {
    const text = 'Hanne Vestergaard banks with the cooperative in Aarhus under number 5521';
    expect((await call('agent', 'POST', '/v1/events', chatEvent('cust-h1', text))).status).toBe(202);
    await strong();
    expect((await settle(await erase('cust-h1'))).status).toBe('completed');
    const same = await call('agent', 'POST', '/v1/events', chatEvent('cust-h1', text, { source: { system: 'restore', channel: 'chat' } }));
    expect(same.status).toBe(409);
    expect(same.body.code).toBe('ERASURE.CONTENT_ERASED');
    const other = await call('agent', 'POST', '/v1/events', chatEvent('cust-h2', text));
    expect(other.status, other.text).toBe(202);
  });

  it('under any subject is refused when the tenant scopes tombstones to the tenant, for erasures made before the switch too', async () => {
    const text = 'Ingrid Solberg parks the blue van behind the bakery on Elm Row';
    expect((await call('agent', 'POST', '/v1/events', chatEvent('cust-i1', text))).status).toBe(202);
    await strong();
    expect((await settle(await erase('cust-i1'))).status).toBe('completed');
    await setPolicy((p) => (p.erasure.tombstoneScope = 'tenant'));
    try {
      const other = await call('agent', 'POST', '/v1/events', chatEvent('cust-i2', `  ${text.toUpperCase()}`));
      expect(other.status).toBe(409);
      expect(other.body.code).toBe('ERASURE.CONTENT_ERASED');
      expect(other.text).not.toContain('Ingrid');
      const batch = await call('agent', 'POST', '/v1/events', {
        events: [chatEvent('cust-i3', 'an unrelated note'), chatEvent('cust-i4', text)],
      });
      expect(batch.status).toBe(409);
      expect(batch.text).toContain('events.1.content');
      expect((await call('agent', 'POST', '/v1/events', chatEvent('cust-i3', 'an unrelated note'))).status).toBe(202);
    } finally {
      await setPolicy((p) => (p.erasure.tombstoneScope = 'subject'));
    }
  });

  it('refuses a tombstone scope or workset retention the policy does not know, with the field path', async () => {
    for (const erasure of [{ tombstoneScope: 'world' }, { worksetRetentionDays: 0 }, { worksetRetentionDays: 1e8 }]) {
      const current = await call('admin', 'GET', '/v1/policy');
      const { version, ...document } = current.body;
      const put = await call('admin', 'PUT', `/v1/policy?expectedVersion=${version}`, {
        ...document,
        erasure: { ...document.erasure, ...erasure },
      });
      expect(put.status).toBe(422);
      expect(put.text).toContain(`erasure.${Object.keys(erasure)[0]}`);
    }
  });
});

describe('the workset of an erasure that gets no certificate', () => {
  it('is shredded when no approval comes in time', async () => {
    await setPolicy((p) => (p.erasure = { ...p.erasure, approvalThreshold: 0, approvalTimeoutHours: 0.0005 }));
    try {
      expect(
        (await call('agent', 'POST', '/v1/events', chatEvent('cust-j1', 'Jonas Brekke waits for an approval that never comes'))).status,
      ).toBe(202);
      await strong();
      const id = await erase('cust-j1');
      expect((await settle(id)).status).toBe('approval_timed_out');
      await expect.poll(() => t.elma.vault.isShredded('acme', ErasureStore.keyId(id)), { timeout: 20_000 }).toBe(true);
      await expect(t.elma.erasure.store.workset('acme', id)).rejects.toBeInstanceOf(KeyShredded);
      await expect(t.elma.erasure.store.scope('acme', id)).rejects.toBeInstanceOf(KeyShredded);
      expect(await t.elma.erasure.store.abandonment('acme', id)).toMatchObject({ outcome: 'ERASURE.APPROVAL_TIMEOUT' });
      // The records themselves were not erased.
      expect(await recallTexts('Jonas Brekke approval never comes')).toContain('Jonas Brekke waits for an approval that never comes');
    } finally {
      await setPolicy((p) => (p.erasure = { ...p.erasure, approvalThreshold: 100, approvalTimeoutHours: 168 }));
    }
  });

  it('is shredded by the sweep once the retention window has passed, when no workflow ended it', async () => {
    expect(
      (await call('agent', 'POST', '/v1/events', chatEvent('cust-k1', 'Kasimir Lund is captured by an erasure whose workflow died')))
        .status,
    ).toBe(202);
    await strong();
    const dpo: Principal = { tenant: 'acme', sub: 'dpo-9', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' };
    // The steps the workflow would run up to the capture, called directly: no workflow will ever end this request.
    const { requestId } = await t.elma.erasure.requests.request(
      dpo,
      { scope: { type: 'subject', subject: 'cust-k1' }, reason: 'subject_request' },
      'req',
    );
    const at = { attempt: 1, startedAt: new Date().toISOString() };
    const { perRecord } = await t.elma.erasure.steps.authorize('acme', requestId, at);
    const { seeds } = await t.elma.erasure.steps.locate('acme', requestId, perRecord, at);
    await t.elma.erasure.steps.closure('acme', requestId, seeds, at);
    expect((await t.elma.erasure.store.workset('acme', requestId))?.records.length).toBe(1);

    const { erasure } = (await call('admin', 'GET', '/v1/policy')).body;
    const windowMs = (erasure.approvalTimeoutHours + erasure.worksetRetentionDays * 24) * 3_600_000;
    await t.elma.erasure.certification.expireWorksets(new Date(Date.now() + windowMs - 3_600_000).toISOString());
    expect(await t.elma.vault.isShredded('acme', ErasureStore.keyId(requestId))).toBe(false);
    const later = await t.elma.erasure.certification.expireWorksets(new Date(Date.now() + windowMs + 60_000).toISOString());
    expect(later.expired).toBeGreaterThanOrEqual(1);
    expect(await t.elma.vault.isShredded('acme', ErasureStore.keyId(requestId))).toBe(true);
    await expect(t.elma.erasure.store.workset('acme', requestId)).rejects.toBeInstanceOf(KeyShredded);
    expect(await t.elma.erasure.store.abandonment('acme', requestId)).toMatchObject({ outcome: 'ERASURE.WORKSET_EXPIRED' });
    // A certified erasure is not an open workset: the sweep leaves it alone and counts it no more.
    expect((await t.elma.erasure.certification.expireWorksets(new Date(Date.now() + windowMs + 60_000).toISOString())).expired).toBe(0);
  });
});
