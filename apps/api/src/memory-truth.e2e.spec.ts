import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { callApi, chatEvent, startTestApp, type TestApp } from './testing';

/**
 * Conflicts are state, not overwrites, and recall is
 * bitemporal. The server's clock is moved so that "yesterday" and "today"
 * are real transaction times.
 */
const DAY = 86_400_000;
const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) };

let t: TestApp;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

async function ingestFact(subject: string, entity: string, attribute: string, value: string, extra: Record<string, unknown> = {}) {
  const { fact: factExtra, ...rest } = extra;
  const fact = { entity, attribute, value, ...((factExtra as object) ?? {}) };
  const response = await call(
    'agent',
    'POST',
    '/v1/events',
    chatEvent(subject, `note about ${entity}`, { ...rest, content: { text: `note about ${entity}`, fact } }),
  );
  expect(response.status, response.text).toBe(202);
  await strong();
  return response.body.events[0].id as string;
}

/** Values recalled for one fact (`query` is "<entity> <attribute>"), with their dispute flags. */
async function facts(query: string, options: { asOf?: string; knownAsOf?: string } = {}) {
  await strong();
  const response = await call('agent', 'POST', '/v1/recall', {
    query,
    purpose: 'support',
    budgetTokens: 2000,
    kinds: ['semantic'],
    ...options,
  });
  expect(response.status, response.text).toBe(200);
  return {
    values: (response.body.items as { text: string; citation: { disputed: boolean } }[])
      .filter((i) => i.text.startsWith(`${query}: `))
      .map((i) => `${i.text.slice(query.length + 2)}${i.citation.disputed ? ' (disputed)' : ''}`)
      .sort(),
    context: response.body.context as string,
  };
}

beforeAll(async () => {
  t = await startTestApp({ clock });
  const mint = (sub: string, claims: Partial<Principal>) => t.token({ sub, ...claims });
  tokens.agent = await mint('agent-1', { roles: ['agent'], purposes: ['support'], clearance: 'confidential' });
  tokens.reviewer = await mint('reviewer-1', { roles: ['reviewer'], purposes: ['support'], clearance: 'confidential' });
  tokens.admin = await mint('admin-1', { roles: ['admin'], purposes: ['support'], clearance: 'confidential' });
});
afterAll(async () => t?.close());

describe('bitemporal recall: which policy applied, and what did we know when', () => {
  const lastQuarter = '2026-08-15T00:00:00.000Z';
  let yesterday: string;

  it('a later valid time bounds the earlier fact instead of overwriting it', async () => {
    clock.offsetMs = -10 * DAY;
    await ingestFact('acme-ops', 'ACME', 'refund window', '30 days', {
      occurredAt: '2026-07-01T00:00:00Z',
      fact: { validFrom: '2026-07-01T00:00:00Z' },
    });
    clock.offsetMs = 0;
    yesterday = new Date(Date.now() - DAY).toISOString();
    await ingestFact('acme-ops', 'ACME', 'refund window', '14 days', {
      occurredAt: '2026-10-01T00:00:00Z',
      fact: { validFrom: '2026-10-01T00:00:00Z' },
    });

    expect((await facts('ACME refund window', { asOf: lastQuarter })).values).toEqual(['30 days']);
    expect((await facts('ACME refund window')).values).toEqual(['14 days']);
  });

  it('answers as the system knew it yesterday, before today’s change was recorded', async () => {
    expect((await facts('ACME refund window', { knownAsOf: yesterday })).values).toEqual(['30 days']);
  });

  it('a correction recorded today about last quarter prevails for last quarter, but not as known yesterday', async () => {
    const source = await ingestFact('acme-ops', 'ACME', 'refund note', 'see contract', { occurredAt: '2026-07-01T00:00:00Z' });
    const correction = {
      kind: 'semantic',
      content: {
        text: 'ACME refund window: 45 days',
        fact: {
          entity: 'ACME',
          attribute: 'refund window',
          value: '45 days',
          validFrom: '2026-07-01T00:00:00Z',
          validTo: '2026-10-01T00:00:00Z',
        },
      },
      sourceEventIds: [source],
      purposes: ['support'],
      correction: true,
    };
    expect((await call('agent', 'POST', '/v1/memories', correction)).body.code).toBe('AUTH.FORBIDDEN');
    const written = await call('admin', 'POST', '/v1/memories', correction);
    expect(written.status, written.text).toBe(201);

    expect((await facts('ACME refund window', { asOf: lastQuarter })).values).toEqual(['45 days']);
    expect((await facts('ACME refund window', { asOf: lastQuarter, knownAsOf: yesterday })).values).toEqual(['30 days']);
    expect((await facts('ACME refund window')).values).toEqual(['14 days']);
  });
});

describe('conflicts are state, not overwrites', () => {
  it('keeps both sides of an undecidable contradiction, flagged, and says so in the context', async () => {
    await ingestFact('acme-hr', 'ACME', 'chief executive', 'Li Wei', { occurredAt: '2026-11-01T00:00:00Z' });
    await ingestFact('acme-hr', 'ACME', 'chief executive', 'Zhang Min', { occurredAt: '2026-11-01T00:00:00Z' });

    const recalled = await facts('ACME chief executive');
    expect(recalled.values).toEqual(['Li Wei (disputed)', 'Zhang Min (disputed)']);
    expect(recalled.context).toMatch(
      /Sources disagree on ACME chief executive: "(Li Wei|Zhang Min)" \(\[\d\]\) vs "(Li Wei|Zhang Min)" \(\[\d\]\)/,
    );
  });

  it('lets an authorised person adjudicate, recording the decision as new versions', async () => {
    const hits = await call('agent', 'POST', '/v1/recall', {
      query: 'ACME chief executive',
      purpose: 'support',
      budgetTokens: 2000,
      kinds: ['semantic'],
    });
    const zhang = (hits.body.items as { id: string; text: string }[]).find((i) => i.text.endsWith('Zhang Min'))!;
    expect((await call('agent', 'POST', `/v1/memories/${zhang.id}/adjudicate`, { decision: 'accept' })).status).toBe(403);
    expect((await call('reviewer', 'POST', `/v1/memories/${zhang.id}/adjudicate`, { decision: 'maybe' })).status).toBe(422);

    const decided = await call('reviewer', 'POST', `/v1/memories/${zhang.id}/adjudicate`, { decision: 'accept' });
    expect(decided.status, decided.text).toBe(200);
    expect(decided.body.memory).toMatchObject({ status: 'active', version: 3, resolution: { rule: 'adjudication', by: 'reviewer-1' } });
    expect((await facts('ACME chief executive')).values).toEqual(['Zhang Min']);
    const loser = decided.body.revised.find((r: { id: string }) => r.id !== zhang.id);
    expect(loser).toMatchObject({ status: 'superseded' });
  });

  it('lets a more authoritative source prevail, naming the rule that decided', async () => {
    const { version, ...policy } = (await call('admin', 'GET', '/v1/policy')).body;
    await call('admin', 'PUT', `/v1/policy?expectedVersion=${version}`, { ...policy, authoritativeSources: ['erp'] });
    await ingestFact('acme-fin', 'ACME', 'payment terms', 'net 60', { occurredAt: '2026-11-05T00:00:00Z' });
    await ingestFact('acme-fin', 'ACME', 'payment terms', 'net 30', {
      occurredAt: '2026-11-01T00:00:00Z',
      source: { system: 'erp', channel: 'system' },
    });

    expect((await facts('ACME payment terms')).values).toEqual(['net 30']);
  });
});
