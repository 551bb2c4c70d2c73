import { describe, expect, it } from 'vitest';
import { makeRecord, type RecordOverrides } from '../testing';
import { settleConflicts } from '../memory/conflicts';
import type { MemoryRecord, SourceTrust } from '../memory/record';
import { DEFAULT_REVIEW_THRESHOLDS } from '../policy/policy';
import { sourceTierShifts, trustFlags, unsupportedClaims, WriteRateWindows, type IngestedWrite } from './detectors';

const JAN = '2026-01-01T00:00:00.000Z';
const MAR = '2026-03-01T00:00:00.000Z';
const minutes = (n: number) => new Date(Date.parse(MAR) + n * 60_000).toISOString();

/** A fact from one ingest event (`evt-<id>`), recorded at `recordedAt`. */
const fact = (id: string, entity: string, attribute: string, value: string, overrides: RecordOverrides = {}): MemoryRecord => ({
  ...makeRecord({
    id,
    validFrom: JAN,
    recordedAt: JAN,
    provenance: { sourceEventIds: [`evt-${id}`], parentIds: [], rule: 'test', ruleVersion: '1' },
    ...overrides,
  }),
  content: { text: `${entity} ${attribute}: ${value}`, fact: { entity, attribute, value } },
});
const refund = (id: string, value: string, sourceTrust: SourceTrust, overrides: RecordOverrides = {}) =>
  fact(id, 'ACME', 'refund window', value, { sourceTrust, ...overrides });

/** What the projection does: the newcomer settled against what is current. */
const settle = (incoming: MemoryRecord, current: MemoryRecord[]) => settleConflicts(incoming, current, incoming.recordedAt);

describe('trust conflicts', () => {
  it('flags a lower-trust fact that contradicts an established higher-trust one, naming ids only', () => {
    const policy = refund('policy', '30 days', 'certified');
    const poison = refund('poison', '90 days', 'external', { validFrom: MAR, recordedAt: MAR });
    const flags = trustFlags([poison], settle(poison, [policy]));
    expect(flags).toEqual([
      {
        key: expect.any(String),
        kind: 'trust_conflict',
        rule: 'lower_trust_contradiction',
        eventIds: ['evt-poison'],
        recordIds: ['poison', 'policy'],
        count: 1,
        raisedAt: MAR,
      },
    ]);
    const stored = JSON.stringify(flags.map(({ key: _key, ...flag }) => flag));
    for (const content of ['ACME', 'refund', '90 days', '30 days', 'user-1']) expect(stored).not.toContain(content);
  });

  it('flags a fact taken over by a higher tier that is not a registered authority', () => {
    const said = refund('said', '30 days', 'user');
    const claimed = refund('claimed', '90 days', 'certified', { recordedAt: MAR });
    expect(trustFlags([claimed], settle(claimed, [said]))).toMatchObject([
      { kind: 'trust_shift', rule: 'fact_tier_flip', eventIds: ['evt-claimed'], recordIds: ['claimed', 'said'], count: 1 },
    ]);
  });

  it('raises nothing when a registered authoritative source corrects a user statement', () => {
    const said = refund('said', '30 days', 'user');
    const system = refund('system', '45 days', 'authoritative', { recordedAt: MAR });
    expect(trustFlags([system], settle(system, [said]))).toEqual([]);
  });

  it('raises nothing for a routine policy update by the same certified source', () => {
    const v1 = refund('v1', '30 days', 'certified');
    const v2 = refund('v2', '45 days', 'certified', { validFrom: MAR, recordedAt: MAR });
    const revisions = settle(v2, [v1]);
    expect(revisions.map((r) => r.resolution?.rule)).toEqual(['later_valid_time']);
    expect(trustFlags([v2], revisions)).toEqual([]);
  });

  it('raises nothing for an explicit correction, whatever its tier', () => {
    const policy = refund('policy', '30 days', 'certified');
    const correction = refund('fix', '60 days', 'user', { correction: true, recordedAt: MAR });
    expect(trustFlags([correction], settle(correction, [policy]))).toEqual([]);
  });
});

const write = (eventId: string, sourceSystem: string, sourceTrust: SourceTrust, at = MAR): IngestedWrite => ({
  eventId,
  sourceSystem,
  sourceTrust,
  recordedAt: at,
});

describe('source tier shifts', () => {
  it('raises nothing the first time a source is seen, nor while it keeps its tier', () => {
    const first = sourceTierShifts(new Map(), [write('e1', 'policy-portal', 'certified'), write('e2', 'policy-portal', 'certified')]);
    expect(first.flags).toEqual([]);
    expect(first.observed).toEqual([{ system: 'policy-portal', tier: 'certified', at: MAR }]);
    const known = new Map([['policy-portal', { tier: 'certified' as const, at: JAN }]]);
    expect(sourceTierShifts(known, [write('e3', 'policy-portal', 'certified')]).flags).toEqual([]);
  });

  it('flags the event with which a source is seen at another tier (up or down)', () => {
    const known = new Map([['kb', { tier: 'external' as SourceTrust, at: JAN }]]);
    const { flags, observed } = sourceTierShifts(known, [write('e1', 'kb', 'certified'), write('e2', 'kb', 'certified')]);
    expect(flags).toMatchObject([
      { kind: 'trust_shift', rule: 'source_tier_changed', eventIds: ['e1'], recordIds: ['mem_ep_e1'], sourceSystem: 'kb' },
    ]);
    expect(observed).toEqual([{ system: 'kb', tier: 'certified', at: MAR }]);
  });

  it('passes over writes no later than the one that set the known tier (a replay raises nothing)', () => {
    const known = new Map([['kb', { tier: 'certified' as SourceTrust, at: MAR }]]);
    const replayed = [write('old', 'kb', 'external', JAN), write('change', 'kb', 'certified', MAR)];
    expect(sourceTierShifts(known, replayed)).toEqual({ flags: [], observed: [] });
  });
});

describe('write bursts', () => {
  const chatTurn = (n: number) => write(`chat-${n}`, 'chat', 'user', minutes(n / 4));

  it('raises nothing for a busy chat session: 120 turns in half an hour, a fact restated now and then', () => {
    const windows = new WriteRateWindows();
    const turns = Array.from({ length: 120 }, (_, n) => chatTurn(n));
    const facts = [0, 7, 15, 30].map((m, i) => fact(`f${i}`, 'Li Wei', '偏好', i % 2 ? '邮件' : 'email', { recordedAt: minutes(m) }));
    expect(windows.observe(DEFAULT_REVIEW_THRESHOLDS, { ingested: turns, facts })).toEqual([]);
  });

  it('flags one burst of facts about one entity and attribute, once, however long it goes on', () => {
    const windows = new WriteRateWindows();
    const facts = Array.from({ length: 12 }, (_, n) => refund(`p${n}`, '90 days', 'external', { recordedAt: minutes(n / 2) }));
    const flags = windows.observe(DEFAULT_REVIEW_THRESHOLDS, { ingested: [], facts });
    expect(flags).toHaveLength(1);
    expect(flags[0]).toMatchObject({ kind: 'write_burst', rule: 'fact_burst', count: DEFAULT_REVIEW_THRESHOLDS.maxFactsPerKey + 1 });
    expect(flags[0].eventIds).toEqual(facts.slice(0, 6).map((f) => f.provenance.sourceEventIds[0]));
    // The same writes again (a replayed batch) count nothing twice.
    expect(windows.observe(DEFAULT_REVIEW_THRESHOLDS, { ingested: [], facts })).toEqual([]);
  });

  it('raises nothing for the same facts spread over hours', () => {
    const windows = new WriteRateWindows();
    const facts = Array.from({ length: 12 }, (_, n) => refund(`p${n}`, '90 days', 'external', { recordedAt: minutes(n * 30) }));
    expect(windows.observe(DEFAULT_REVIEW_THRESHOLDS, { ingested: [], facts })).toEqual([]);
  });

  it('flags a source that writes more events than the tenant allows in its window', () => {
    const windows = new WriteRateWindows();
    const thresholds = { ...DEFAULT_REVIEW_THRESHOLDS, maxEventsPerSource: 20 };
    const flood = Array.from({ length: 30 }, (_, n) => write(`w${n}`, 'web-crawler', 'external', minutes(n / 10)));
    expect(windows.observe(thresholds, { ingested: flood, facts: [] })).toMatchObject([
      { kind: 'write_burst', rule: 'source_burst', sourceSystem: 'web-crawler', count: 21 },
    ]);
  });

  it('keys a burst by its first write, so a process that sees it again raises the same flag', () => {
    const facts = Array.from({ length: 7 }, (_, n) => refund(`p${n}`, '90 days', 'external', { recordedAt: minutes(n) }));
    const once = new WriteRateWindows().observe(DEFAULT_REVIEW_THRESHOLDS, { ingested: [], facts });
    const again = new WriteRateWindows().observe(DEFAULT_REVIEW_THRESHOLDS, { ingested: [], facts });
    expect(once.map((f) => f.key)).toEqual(again.map((f) => f.key));
  });
});

describe('summary against its sources', () => {
  it('finds nothing unsupported in an extractive summary (English and Chinese)', () => {
    const sources = ['The refund window is 30 days. Orders ship from Harwick.', '退款期限为30天，仓库在「上海」。'];
    expect(unsupportedClaims('The refund window is 30 days. 退款期限为30天，仓库在「上海」。 Orders ship from Harwick.', sources)).toEqual(
      [],
    );
  });

  it('finds numbers, dates and names the sources never stated', () => {
    const sources = ['The refund window is 30 days from 2026-03-01, confirmed by Berlin.'];
    expect(unsupportedClaims('The refund window is 90 days from 2026-04-01, confirmed by Paris.', sources).sort()).toEqual(
      ['2026-04-01', '90', 'Paris'].sort(),
    );
    expect(unsupportedClaims('退款期限为90天，仓库在「深圳」。', ['退款期限为30天，仓库在「上海」。']).sort()).toEqual(['90', '深圳']);
  });

  it('takes no part of a stated number for a new claim (a sentence split at a decimal point)', () => {
    expect(unsupportedClaims('The fee is 3. 5 euros a month.', ['The fee is 3.5 euros a month.'])).toEqual([]);
  });

  it('reads 1,000 and 1000 as the same number, and a capital that only starts a sentence as no name', () => {
    expect(unsupportedClaims('Orders above 1,000 units ship free. Shipping is free.', ['orders above 1000 units ship free'])).toEqual([]);
  });
});
