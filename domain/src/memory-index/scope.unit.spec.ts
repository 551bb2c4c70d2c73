import { describe, expect, it } from 'vitest';
import { makeRecord } from '../testing';
import { matchesScope, scopeKeys } from './scope';
import { ancestryOf, inheritedSources, withSourcesOf } from '../memory/lineage';
import { extractedRecords } from '../memory/derive';
import { RecallRequest, scopeOf } from '../recall/schema';
import type { EventIngested } from '../ingest/schema';

const event: EventIngested = {
  eventId: 'evt-1',
  tenant: 'acme',
  subject: 'cust-chen',
  occurredAt: '2026-11-01T10:00:00Z',
  recordedAt: '2026-11-01T10:00:01Z',
  activity: 'chat.turn',
  content: { text: '陈女士的发票地址是上海。', fact: { entity: '陈女士', attribute: '发票地址', value: '上海' } },
  source: { system: 'crm', channel: 'email' },
  sensitivity: 'internal',
  purposes: ['support'],
  retention: 'standard',
  session: 's-chen',
  idempotencyKey: 'k',
  actor: 'agent-1',
};

describe('what a scope reads of a record', () => {
  it('an event yields an episode and a fact that both carry its source and session', () => {
    // Given an event of session s-chen from the CRM's email channel, when its records are extracted
    const records = extractedRecords(event);
    // then both are in the scope of that session and source, and the fact in its entity's
    for (const record of records) {
      expect(record.sources).toEqual([{ system: 'crm', channel: 'email' }]);
      expect(matchesScope(record, { sessions: ['s-chen'], sources: [{ channel: 'email' }] })).toBe(true);
      expect(matchesScope(record, { sources: [{ system: 'crm', channel: 'chat' }] })).toBe(false);
    }
    expect(records.map((r) => matchesScope(r, { entities: ['陈女士'] }))).toEqual([false, true]);
  });

  it('a record derived from two subjects’ records joins the scope of each, and of their sessions and sources', () => {
    const chen = makeRecord({ id: 'a', subject: 'cust-chen', session: 's-chen', sources: [{ system: 'crm', channel: 'email' }] });
    const wang = makeRecord({ id: 'b', subject: 'cust-wang', policy: { owner: 'cust-wang' }, sources: [{ system: 'crm' }] });
    const derived = makeRecord({
      id: 'c',
      subject: 'cust-chen',
      provenance: { sourceEventIds: [], parentIds: ['a', 'b'], ancestry: ancestryOf([chen, wang]), rule: 't', ruleVersion: '1' },
      ...inheritedSources([wang, chen, wang]),
    });
    expect(derived.sources).toEqual([{ system: 'crm', channel: 'email' }, { system: 'crm' }]);
    for (const scope of [
      { subjects: ['cust-wang'] },
      { subjects: ['cust-chen'] },
      { sessions: ['s-chen'] },
      { sources: [{ channel: 'email' }] },
    ])
      expect(matchesScope(derived, scope)).toBe(true);
    expect(matchesScope(derived, { subjects: ['cust-li'] })).toBe(false);
  });

  it('no value can forge another key: values are encoded, not delimited', () => {
    const record = makeRecord({ content: { text: 'x', fact: { entity: 'acme\u001fsubject:"victim"', attribute: 'a', value: 'v' } } });
    expect(scopeKeys(record).every((key) => !/\p{Cc}/u.test(key))).toBe(true);
    expect(matchesScope(record, { subjects: ['victim'] })).toBe(false);
  });

  it('a revision logged before sources were kept takes them from the version it follows', () => {
    const [first] = extractedRecords(event);
    const { sources: _sources, ...revision } = { ...first, version: 2 };
    expect(withSourcesOf(revision, first).sources).toEqual(first.sources);
    expect(withSourcesOf(first, { sources: [{ system: 'other' }] }).sources).toEqual(first.sources);
  });
});

describe('a recall request’s filter', () => {
  const parse = (body: Record<string, unknown>) => RecallRequest.safeParse({ query: 'q', purpose: 'support', ...body });

  it('names its scope apart from its kinds', () => {
    const request = parse({ filter: { subjects: ['cust-chen'], kinds: ['semantic'] } });
    expect(request.success && scopeOf(request.data.filter)).toEqual({ subjects: ['cust-chen'] });
    expect(scopeOf({})).toBeUndefined();
  });

  it('refuses kinds in both places, an empty range and an unknown key', () => {
    const paths = (body: Record<string, unknown>) => parse(body).error?.issues.map((i) => i.path.join('.'));
    expect(paths({ kinds: ['semantic'], filter: { kinds: ['episodic'] } })).toEqual(['filter.kinds']);
    expect(paths({ filter: { occurredAfter: '2026-11-02T00:00:00Z', occurredBefore: '2026-11-02T08:00:00+08:00' } })).toEqual([
      'filter.occurredBefore',
    ]);
    expect(paths({ filter: { customers: ['x'] } })).toEqual(['filter']);
    expect(parse({ kinds: ['semantic'] }).success).toBe(true);
  });
});
