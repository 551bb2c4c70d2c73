import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, changePolicy, roleTokens, startTestApp, type Json, type TestApp } from './testing';

/**
 * The W5 poisoning defences over real HTTP: a lower-trust contradiction of a
 * certified fact stays out of the current answer and raises a review flag,
 * which the review roles list and resolve (audited), and nobody else, in no
 * other tenant, can see or touch.
 */
let t: TestApp;
let tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

let n = 0;
/** A fact about ACME's refund window from a source system through a channel (`system`: certified, `web`: external). */
const refund = (attribute: string, value: string, channel: string, system: string, validFrom: string) => ({
  subject: 'cust-9',
  occurredAt: validFrom,
  activity: 'document.update',
  content: { text: `ACME ${attribute} is ${value}`, fact: { entity: 'ACME', attribute, value, validFrom } },
  source: { system, channel, externalId: `doc-${n++}` },
  purposes: ['support'],
});

async function ingest(event: unknown): Promise<string> {
  const response = await call('agent', 'POST', '/v1/events', event);
  expect(response.status, response.text).toBe(202);
  await strong();
  return response.body.events[0].id as string;
}

const flagsOf = async (who: string, query = '') => {
  const response = await call(who, 'GET', `/v1/review-flags${query}`);
  expect(response.status, response.text).toBe(200);
  return response.body as { items: Json[]; nextCursor?: string };
};

let policyEvent = '';
let poisonEvent = '';

beforeAll(async () => {
  t = await startTestApp();
  tokens = await roleTokens(t, ['agent', 'service', 'reviewer', 'admin', 'compliance', 'auditor', 'dpo']);
  tokens.globexReviewer = await t.token({ tenant: 'globex', sub: 'reviewer-g', roles: ['reviewer'], purposes: ['support'] });
  policyEvent = await ingest(refund('refund window', '30 days', 'system', 'policy-portal', '2026-01-01T00:00:00Z'));
  poisonEvent = await ingest(refund('refund window', '90 days', 'web', 'forum-scrape', '2026-03-01T00:00:00Z'));
});
afterAll(async () => t?.close());

describe('a lower-trust contradiction of a certified fact', () => {
  it('is kept out of the current answer: recall gives the certified value only', async () => {
    const response = await call('agent', 'POST', '/v1/recall', {
      query: 'ACME refund window',
      purpose: 'support',
      budgetTokens: 2000,
      kinds: ['semantic'],
    });
    expect(response.status, response.text).toBe(200);
    const texts = (response.body.items as { text: string }[]).map((i) => i.text);
    expect(texts.some((text) => text.includes('30 days'))).toBe(true);
    expect(texts.some((text) => text.includes('90 days'))).toBe(false);
  });

  it('raises a trust_conflict flag naming the events and records by id, visible to the review roles', async () => {
    for (const who of ['reviewer', 'admin', 'compliance', 'auditor']) {
      const { items } = await flagsOf(who);
      expect(items).toEqual([
        {
          id: expect.stringMatching(/^rf_/),
          kind: 'trust_conflict',
          rule: 'lower_trust_contradiction',
          eventIds: [poisonEvent],
          recordIds: [`mem_se_${poisonEvent}`, `mem_se_${policyEvent}`],
          count: 1,
          raisedAt: expect.any(String),
          status: 'open',
        },
      ]);
    }
  });
});

describe('who may see and resolve flags', () => {
  it('refuses the other roles with problem+json 403', async () => {
    for (const who of ['agent', 'service', 'dpo']) {
      const response = await call(who, 'GET', '/v1/review-flags');
      expect(response.status).toBe(403);
      expect(response.contentType).toContain('application/problem+json');
      expect(response.body.code).toBe('AUTH.FORBIDDEN');
    }
    const [flag] = (await flagsOf('reviewer')).items;
    for (const who of ['agent', 'compliance', 'auditor']) {
      const response = await call(who, 'POST', `/v1/review-flags/${flag.id}/resolve`, { decision: 'dismissed' });
      expect(response.status).toBe(403);
      expect(response.body.code).toBe('AUTH.FORBIDDEN');
    }
  });

  it("shows another tenant none of them, and answers its resolve of one exactly like a forged id's", async () => {
    expect((await flagsOf('globexReviewer')).items).toEqual([]);
    const [flag] = (await flagsOf('reviewer')).items;
    const foreign = await call('globexReviewer', 'POST', `/v1/review-flags/${flag.id}/resolve`, { decision: 'dismissed' });
    const forged = await call('reviewer', 'POST', '/v1/review-flags/rf_00000000-0000-4000-8000-000000000000/resolve', {
      decision: 'dismissed',
    });
    for (const response of [foreign, forged]) {
      expect(response.status).toBe(404);
      expect(response.contentType).toContain('application/problem+json');
      expect(response.body.code).toBe('REVIEW.FLAG_NOT_FOUND');
    }
    expect(Object.keys(foreign.body).sort()).toEqual(Object.keys(forged.body).sort());
    expect((await flagsOf('reviewer')).items[0].status).toBe('open');
  });

  it('refuses a malformed query or decision with 422, naming the field', async () => {
    const kind = await call('reviewer', 'GET', '/v1/review-flags?kind=everything');
    expect(kind.status).toBe(422);
    expect(kind.body.code).toBe('REQUEST.VALIDATION_FAILED');
    expect((await call('reviewer', 'GET', '/v1/review-flags?cursor=abc')).status).toBe(422);
    const [flag] = (await flagsOf('reviewer')).items;
    const decision = await call('reviewer', 'POST', `/v1/review-flags/${flag.id}/resolve`, { decision: 'deleted' });
    expect(decision.status).toBe(422);
  });
});

describe('lists and resolution', () => {
  it('pages through the flags with a cursor and filters by kind and status', async () => {
    // Two more contradictions from the same forum, so there are three flags to page through.
    await ingest(refund('delivery fee', '0 EUR', 'system', 'policy-portal', '2026-01-01T00:00:00Z'));
    await ingest(refund('delivery fee', '50 EUR', 'web', 'forum-scrape', '2026-03-02T00:00:00Z'));
    await ingest(refund('warranty', '2 years', 'system', 'policy-portal', '2026-01-01T00:00:00Z'));
    await ingest(refund('warranty', '1 month', 'web', 'forum-scrape', '2026-03-03T00:00:00Z'));

    const seen: string[] = [];
    let page = await flagsOf('reviewer', '?limit=1&kind=trust_conflict');
    seen.push(...page.items.map((f) => f.id));
    while (page.nextCursor) {
      page = await flagsOf('reviewer', `?limit=1&kind=trust_conflict&cursor=${page.nextCursor}`);
      seen.push(...page.items.map((f) => f.id));
    }
    expect(seen).toHaveLength(3);
    expect(new Set(seen).size).toBe(3);
    expect((await flagsOf('reviewer', '?kind=write_burst')).items).toEqual([]);
    expect((await flagsOf('reviewer', '?status=open')).items).toHaveLength(3);
  });

  it('resolves a flag once, without changing any record, and audits raise, list and resolve', async () => {
    const [flag] = (await flagsOf('reviewer')).items;
    const resolved = await call('reviewer', 'POST', `/v1/review-flags/${flag.id}/resolve`, {
      decision: 'confirmed',
      note: 'forum post, not policy',
    });
    expect(resolved.status, resolved.text).toBe(200);
    expect(resolved.body).toMatchObject({ id: flag.id, status: 'confirmed', resolution: { decision: 'confirmed', by: 'reviewer-1' } });
    const again = await call('admin', 'POST', `/v1/review-flags/${flag.id}/resolve`, { decision: 'dismissed' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('REVIEW.FLAG_ALREADY_RESOLVED');
    expect((await flagsOf('auditor', '?status=confirmed')).items.map((f) => f.id)).toEqual([flag.id]);

    // The default policy reads current records only: the superseded version is checked where it is kept.
    expect((await t.elma.index.get('acme', `mem_se_${poisonEvent}`))?.record).toMatchObject({ status: 'superseded', version: 2 });

    const audit = await call('auditor', 'GET', `/v1/audit?resource=${flag.id}`);
    expect(audit.status).toBe(200);
    const rules = audit.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { actor: string; decision: { effect: string; rule: string } });
    expect(rules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          actor: 'elma.review',
          decision: { effect: 'allow', rule: 'review.raise.trust_conflict.lower_trust_contradiction' },
        }),
        expect.objectContaining({ actor: 'reviewer-1', decision: { effect: 'allow', rule: 'review.resolve.confirmed' } }),
        expect.objectContaining({ actor: 'agent-1', decision: { effect: 'deny', rule: 'role:reviewer|admin' } }),
      ]),
    );
  });
});

describe('explicit corrections', () => {
  const correction = (value: string) => ({
    kind: 'semantic',
    content: { text: `ACME refund window is ${value}`, fact: { entity: 'ACME', attribute: 'refund window', value } },
    sourceEventIds: [policyEvent],
    validFrom: '2026-03-05T00:00:00Z',
    correction: true,
  });

  it('are refused for roles that may not correct, with a problem+json code, and write nothing', async () => {
    const before = await t.elma.log.headPosition();
    for (const who of ['agent', 'service']) {
      const response = await call(who, 'POST', '/v1/memories', correction('7 days'));
      expect(response.status).toBe(403);
      expect(response.contentType).toContain('application/problem+json');
      expect(response.body.code).toBe('AUTH.FORBIDDEN');
    }
    const memories: unknown[] = [];
    for await (const e of t.elma.log.readAll({ fromPosition: before, filter: { streamNamePrefix: ['memory-acme-'] } })) memories.push(e);
    expect(memories).toEqual([]);
  });

  it('by an authorised role win over the certified fact first, and raise no trust flag', async () => {
    const flagsBefore = (await flagsOf('reviewer')).items.length;
    const written = await call('admin', 'POST', '/v1/memories', correction('60 days'));
    expect(written.status, written.text).toBe(201);
    await strong();
    expect((await t.elma.index.get('acme', `mem_se_${policyEvent}`))?.record).toMatchObject({
      status: 'superseded',
      resolution: { rule: 'explicit_correction', against: [written.body.memory.id] },
    });
    expect((await flagsOf('reviewer')).items).toHaveLength(flagsBefore);
  });

  it('may be made by a reviewer or a DPO, who are no writers under the default policy', async () => {
    for (const who of ['reviewer', 'dpo']) {
      const written = await call(who, 'POST', '/v1/memories', correction(`${who} says 45 days`));
      expect(written.status, written.text).toBe(201);
      expect(written.body.memory).toMatchObject({ correction: true });
    }
    // Without `correction`, the write policy decides as before: a reviewer records nothing.
    const { correction: _correction, ...plain } = correction('14 days');
    expect((await call('reviewer', 'POST', '/v1/memories', plain)).body.code).toBe('POLICY.DENIED');
  });
});

describe('write-rate thresholds in the tenant policy', () => {
  it('are set through PUT /v1/policy and raise one write_burst flag per burst', async () => {
    // The corrections above are projected under the old thresholds first: the lower one applies to what comes
    // after it (on a slower index their three facts would otherwise count as a burst of their own).
    await strong();
    await changePolicy(t.url, tokens.admin, (policy) => {
      expect(policy.reviews).toEqual({ windowMinutes: 10, maxEventsPerSource: 300, maxFactsPerKey: 5 });
      policy.reviews.maxFactsPerKey = 2;
    });
    const refused = await call('admin', 'GET', '/v1/policy');
    const { version, ...document } = refused.body;
    const invalid = await call('admin', 'PUT', `/v1/policy?expectedVersion=${version}`, { ...document, reviews: { windowMinutes: 0 } });
    expect(invalid.status).toBe(422);
    expect(invalid.body.errors.map((e: { path: string }) => e.path)).toContain('reviews.windowMinutes');

    const ids: string[] = [];
    for (const value of ['3 days', '4 days', '5 days', '6 days'])
      ids.push(await ingest(refund('processing time', value, 'chat', 'chat', '2026-04-01T00:00:00Z')));
    const { items } = await flagsOf('reviewer', '?kind=write_burst');
    expect(items).toEqual([expect.objectContaining({ rule: 'fact_burst', count: 3, eventIds: ids.slice(0, 3), status: 'open' })]);
  });
});
