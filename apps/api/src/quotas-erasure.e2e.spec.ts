import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, changePolicy, chatEvent, roleTokens, startTestApp, type Json, type TestApp } from './testing';

/**
 * The stored-memories quota counts what the tenant holds now: an erasure
 * (run by the workflow, which reports nothing to the API) makes room again,
 * because a refusal is only ever made on a fresh count of the index.
 */
describe('an erasure frees room under the storage quotas', () => {
  let t: TestApp;
  let tokens: Record<string, string>;
  const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
  const metric = async (line: string) => {
    const text = await (await fetch(`${t.url}/metrics`)).text();
    return Number(new RegExp(`^${line.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+)$`, 'm').exec(text)?.[1]);
  };

  beforeAll(async () => {
    t = await startTestApp({ temporal: {} });
    tokens = await roleTokens(t, ['agent', 'compliance', 'admin']);
  }, 120_000);
  afterAll(async () => t?.close());

  it('a tenant at its quota writes again once a subject is erased', async () => {
    await changePolicy(t.url, tokens.admin, (policy) => {
      policy.quotas = { storedMemories: 3 };
    });
    const written = await call('agent', 'POST', '/v1/events', {
      events: [
        chatEvent('cust-q', 'Quentin parks in bay nine'),
        chatEvent('cust-q', '昆汀把车停在九号车位'),
        chatEvent('cust-r', 'Rita calls on Mondays'),
      ],
    });
    expect(written.status, written.text).toBe(202);
    const refused = await call('agent', 'POST', '/v1/events', chatEvent('cust-r', 'Rita moved to Leeds'));
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('QUOTA.STORED_MEMORIES');
    expect(await metric('elma_quota_stored_memories{tenant="acme"}')).toBe(3);

    const erasure = await call('compliance', 'POST', '/v1/erasures', {
      scope: { type: 'subject', subject: 'cust-q' },
      reason: 'subject_request',
    });
    expect(erasure.status, erasure.text).toBe(202);
    let status: Json;
    for (let i = 0; i < 600 && !['completed', 'failed', 'verification_failed'].includes(status?.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await call('compliance', 'GET', `/v1/erasures/${erasure.body.requestId}`)).body;
    }
    expect(status.status).toBe('completed');

    // Recounts before a refusal are at most one per tenant every 5 s: the write passes within that.
    const started = Date.now();
    let again = await call('agent', 'POST', '/v1/events', chatEvent('cust-r', 'Rita moved to Leeds'));
    while (again.status === 429 && Date.now() - started < 10_000) {
      await new Promise((r) => setTimeout(r, 500));
      again = await call('agent', 'POST', '/v1/events', chatEvent('cust-r', 'Rita moved to Leeds'));
    }
    expect(again.status, again.text).toBe(202);
    expect(await metric('elma_quota_stored_memories{tenant="acme"}')).toBe(2);
  }, 120_000);
});
