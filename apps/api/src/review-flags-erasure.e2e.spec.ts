import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, roleTokens, startTestApp, type TestApp } from './testing';

/**
 * A review flag names records by id only, so it outlives their erasure
 * without telling anything of them (docs/adr/0013-review-flags.md): the
 * erasure still verifies (its byte scan finds no content in the flags), the
 * flag keeps its ids, and those ids answer like ids that never existed.
 */
let t: TestApp;
let tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

const POISON = 'Quillon Harrowgate says the ACME warranty is 9 weeks';
const fact = (value: string, text: string, channel: string, validFrom: string) => ({
  subject: 'cust-erased',
  occurredAt: validFrom,
  activity: 'document.update',
  content: { text, fact: { entity: 'ACME', attribute: 'warranty', value, validFrom } },
  source: { system: channel === 'system' ? 'policy-portal' : 'forum-scrape', channel },
  purposes: ['support'],
});

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  tokens = await roleTokens(t, ['agent', 'compliance', 'reviewer']);
}, 120_000);
afterAll(async () => t?.close());

describe('a review flag naming an erased record', () => {
  it('keeps its ids, which answer like unknown ids, and lets the erasure verify', async () => {
    for (const event of [
      fact('2 years', 'ACME warranty is 2 years', 'system', '2026-01-01T00:00:00Z'),
      fact('9 weeks', POISON, 'web', '2026-03-01T00:00:00Z'),
    ])
      expect((await call('agent', 'POST', '/v1/events', event)).status).toBe(202);
    await strong();
    const [flag] = (await call('reviewer', 'GET', '/v1/review-flags')).body.items;
    expect(flag).toMatchObject({ kind: 'trust_conflict' });

    const requested = await call('compliance', 'POST', '/v1/erasures', {
      scope: { type: 'subject', subject: 'cust-erased' },
      reason: 'subject_request',
    });
    expect(requested.status, requested.text).toBe(202);
    let progress;
    for (let i = 0; i < 600; i++) {
      progress = (await call('compliance', 'GET', `/v1/erasures/${requested.body.requestId}`)).body;
      if (!['pending', 'running', 'awaiting_approval'].includes(progress.status)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(progress.status).toBe('completed');

    const after = await call('reviewer', 'GET', '/v1/review-flags');
    expect(after.body.items).toEqual([flag]);
    for (const content of ['Quillon', 'Harrowgate', '9 weeks', 'warranty', 'cust-erased']) expect(after.text).not.toContain(content);
    const forged = await call('agent', 'GET', '/v1/memories/mem_se_00000000-0000-4000-8000-000000000000');
    for (const id of flag.recordIds) {
      const gone = await call('agent', 'GET', `/v1/memories/${id}`);
      expect(gone.status).toBe(404);
      expect(gone.body.code).toBe(forged.body.code);
    }
  }, 120_000);
});
