import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makeRecord, type RecordOverrides } from '../testing';
import { conflictsWith, factKey, resolveConflict, sameValue, settleConflicts, validOverlap } from './conflicts';
import { MemoryRecord, SourceTrust } from './record';

const JAN = '2024-01-01T00:00:00.000Z';
const MAR = '2024-03-01T00:00:00.000Z';
const JUN = '2024-06-01T00:00:00.000Z';
const AT = '2024-07-01T12:00:00.000Z';

/** A semantic memory of a fact (makeRecord gives text only). */
const fact = (entity: string, attribute: string, value: string, overrides: RecordOverrides = {}): MemoryRecord => ({
  ...makeRecord(overrides),
  content: { text: `${entity} ${attribute}: ${value}`, fact: { entity, attribute, value } },
});

/** ACME's headquarters; every conflict rule ties unless the test says otherwise. */
const hq = (id: string, value: string, overrides: RecordOverrides = {}): MemoryRecord =>
  fact('ACME', 'headquarters', value, { id, validFrom: JAN, recordedAt: JAN, ...overrides });

describe('what counts as the same fact', () => {
  it('ignores case, width and whitespace in entity, attribute and value', () => {
    expect(factKey({ entity: '  ＡＣＭＥ   Corp ', attribute: 'Head\tQuarters' })).toBe(
      factKey({ entity: 'acme corp', attribute: 'head quarters' }),
    );
    expect(factKey({ entity: 'ACME', attribute: 'ceo' })).not.toBe(factKey({ entity: 'ACME c', attribute: 'eo' }));
    expect(sameValue(' Berlin ', 'ＢＥＲＬＩＮ')).toBe(true);
    expect(sameValue('Berlin', 'Paris')).toBe(false);
  });

  it('treats valid time as half-open, with null as an open end', () => {
    expect(validOverlap({ validFrom: JAN, validTo: MAR }, { validFrom: MAR, validTo: null })).toBe(false);
    expect(validOverlap({ validFrom: JAN, validTo: JUN }, { validFrom: MAR, validTo: null })).toBe(true);
    expect(validOverlap({ validFrom: JAN, validTo: null }, { validFrom: JUN, validTo: null })).toBe(true);
    expect(validOverlap({ validFrom: '2024-03-01T02:00:00+02:00', validTo: null }, { validFrom: JAN, validTo: MAR })).toBe(false);
  });
});

describe('detecting a conflict', () => {
  const berlin = hq('mem-berlin', 'Berlin');

  it('is a conflict when the same fact has another value over overlapping valid time', () => {
    expect(conflictsWith(hq('mem-paris', 'Paris'), berlin)).toBe(true);
  });

  it('is no conflict when the values agree', () => {
    expect(conflictsWith(hq('mem-again', ' berlin'), berlin)).toBe(false);
  });

  it('is no conflict about another attribute', () => {
    const ceo = fact('ACME', 'ceo', 'Berlin', { id: 'mem-ceo' });
    expect(conflictsWith(ceo, berlin)).toBe(false);
  });

  it('is no conflict when the valid times do not overlap', () => {
    expect(conflictsWith(hq('mem-paris', 'Paris', { validFrom: MAR }), hq('mem-berlin', 'Berlin', { validTo: MAR }))).toBe(false);
  });

  it('is no conflict with a fact already superseded', () => {
    expect(conflictsWith(hq('mem-paris', 'Paris'), hq('mem-berlin', 'Berlin', { status: 'superseded' }))).toBe(false);
  });

  it('is a conflict with a fact already disputed', () => {
    expect(conflictsWith(hq('mem-paris', 'Paris'), hq('mem-berlin', 'Berlin', { status: 'disputed' }))).toBe(true);
  });

  it('is no conflict for episodic memories, even with the same fact', () => {
    expect(conflictsWith(hq('mem-paris', 'Paris', { kind: 'episodic' }), berlin)).toBe(false);
    expect(conflictsWith(hq('mem-paris', 'Paris'), hq('mem-berlin', 'Berlin', { kind: 'episodic' }))).toBe(false);
  });

  it('is no conflict across tenants', () => {
    expect(conflictsWith(hq('mem-paris', 'Paris', { tenant: 'tenant-b' }), berlin)).toBe(false);
  });

  it('is no conflict with itself', () => {
    expect(conflictsWith(hq('mem-berlin', 'Paris'), berlin)).toBe(false);
  });
});

describe('resolving a conflict, one rule at a time', () => {
  it('lets an explicit correction win when nothing else differs', () => {
    const decision = resolveConflict(hq('a', 'Berlin'), hq('b', 'Paris', { correction: true }));
    expect(decision).toEqual({ kind: 'resolved', rule: 'explicit_correction', winner: 'b', loser: 'a', effect: 'supersede' });
  });

  it('lets the more authoritative source win when neither is a correction', () => {
    const decision = resolveConflict(hq('a', 'Berlin', { sourceTrust: 'certified' }), hq('b', 'Paris', { sourceTrust: 'user' }));
    expect(decision).toEqual({ kind: 'resolved', rule: 'source_authority', winner: 'a', loser: 'b', effect: 'supersede' });
  });

  it('lets the later valid time win by bounding the earlier fact, not superseding it', () => {
    const decision = resolveConflict(hq('a', 'Berlin', { validFrom: JAN }), hq('b', 'Paris', { validFrom: MAR }));
    expect(decision).toEqual({ kind: 'resolved', rule: 'later_valid_time', winner: 'b', loser: 'a', effect: 'bound' });
  });

  it('lets higher confidence win when correction, authority and valid time tie', () => {
    const decision = resolveConflict(hq('a', 'Berlin', { confidence: 0.6 }), hq('b', 'Paris', { confidence: 0.9 }));
    expect(decision).toEqual({ kind: 'resolved', rule: 'confidence', winner: 'b', loser: 'a', effect: 'supersede' });
  });

  it('leaves a dispute when every rule ties', () => {
    expect(resolveConflict(hq('a', 'Berlin'), hq('b', 'Paris'))).toEqual({ kind: 'disputed' });
  });

  it('treats two corrections and confidences within rounding as ties', () => {
    const a = hq('a', 'Berlin', { correction: true, confidence: 0.7 });
    const b = hq('b', 'Paris', { correction: true, confidence: 0.7 + 1e-12 });
    expect(resolveConflict(a, b)).toEqual({ kind: 'disputed' });
  });

  it('reads valid time as instants, so the same moment in another offset ties', () => {
    const a = hq('a', 'Berlin', { validFrom: '2024-01-01T02:00:00+02:00', confidence: 0.5 });
    expect(resolveConflict(a, hq('b', 'Paris'))).toMatchObject({ rule: 'confidence', winner: 'b' });
  });
});

describe('the order of the rules', () => {
  it('puts a correction above source authority', () => {
    const decision = resolveConflict(
      hq('a', 'Berlin', { sourceTrust: 'authoritative' }),
      hq('b', 'Paris', { sourceTrust: 'model', correction: true }),
    );
    expect(decision).toMatchObject({ rule: 'explicit_correction', winner: 'b' });
  });

  it('puts source authority above later valid time', () => {
    const decision = resolveConflict(
      hq('a', 'Berlin', { sourceTrust: 'certified' }),
      hq('b', 'Paris', { sourceTrust: 'user', validFrom: MAR }),
    );
    expect(decision).toMatchObject({ rule: 'source_authority', winner: 'a', effect: 'supersede' });
  });

  it('puts later valid time above confidence', () => {
    const decision = resolveConflict(hq('a', 'Berlin', { confidence: 1 }), hq('b', 'Paris', { validFrom: MAR, confidence: 0.1 }));
    expect(decision).toMatchObject({ rule: 'later_valid_time', winner: 'b', effect: 'bound' });
  });

  it('lets trust, not recency, decide between tiers: a later external fact does not beat an older certified one', () => {
    const certified = hq('a', 'Berlin', { sourceTrust: 'certified' });
    const external = hq('b', 'Paris', { sourceTrust: 'external', validFrom: JUN, recordedAt: JUN });
    expect(resolveConflict(certified, external)).toMatchObject({ rule: 'source_authority', winner: 'a', loser: 'b', effect: 'supersede' });
    // As it arrives: the external fact is kept out of the current answer, the certified one stays as it was.
    const revisions = settleConflicts(external, [certified], AT);
    expect(revisions).toHaveLength(1);
    expect(revisions[0]).toMatchObject({ id: 'b', status: 'superseded', resolution: { rule: 'source_authority', against: ['a'] } });
  });

  it('keeps an authoritative fact against a later model inference and a later user statement alike', () => {
    const authoritative = hq('a', 'Berlin', { sourceTrust: 'authoritative' });
    for (const sourceTrust of ['model', 'user', 'certified'] as const) {
      const later = hq('b', 'Paris', { sourceTrust, validFrom: JUN, recordedAt: JUN, confidence: 1 });
      expect(settleConflicts(later, [authoritative], AT).map((r) => [r.id, r.status])).toEqual([['b', 'superseded']]);
    }
  });

  it('within one tier, the later valid time still bounds the earlier fact', () => {
    const before = hq('a', 'Berlin', { sourceTrust: 'certified' });
    const after = hq('b', 'Paris', { sourceTrust: 'certified', validFrom: JUN, recordedAt: JUN });
    const revisions = settleConflicts(after, [before], AT);
    expect(revisions.map((r) => [r.id, r.status, r.validTo])).toEqual([['a', 'active', JUN]]);
  });

  it('decides the same whichever record comes first', () => {
    const a = hq('a', 'Berlin', { sourceTrust: 'external', validFrom: MAR });
    const b = hq('b', 'Paris', { sourceTrust: 'certified' });
    expect(resolveConflict(a, b)).toEqual(resolveConflict(b, a));
  });
});

describe('settling an incoming fact', () => {
  it('supersedes the loser in a new version that says why', () => {
    const existing = hq('mem-berlin', 'Berlin');
    const incoming = hq('mem-paris', 'Paris', { sourceTrust: 'certified' });
    expect(settleConflicts(incoming, [existing], AT)).toEqual([
      {
        ...existing,
        status: 'superseded',
        version: 2,
        revisedAt: AT,
        resolution: { rule: 'source_authority', against: ['mem-paris'], decidedAt: AT },
      },
    ]);
  });

  it('revises the incoming fact itself when it loses', () => {
    const existing = hq('mem-berlin', 'Berlin', { correction: true });
    const incoming = hq('mem-paris', 'Paris', { sourceTrust: 'authoritative' });
    const [revised, ...rest] = settleConflicts(incoming, [existing], AT);
    expect(rest).toEqual([]);
    expect(revised).toMatchObject({
      id: 'mem-paris',
      status: 'superseded',
      version: 2,
      resolution: { rule: 'explicit_correction', against: ['mem-berlin'] },
    });
  });

  it('bounds an earlier fact at the later one’s start and keeps it active, so as-of queries before the change still see it', () => {
    const existing = hq('mem-berlin', 'Berlin', { validFrom: JAN });
    const incoming = hq('mem-paris', 'Paris', { validFrom: JUN });
    const [bounded, ...rest] = settleConflicts(incoming, [existing], AT);
    expect(rest).toEqual([]);
    expect(bounded).toMatchObject({ id: 'mem-berlin', status: 'active', validFrom: JAN, validTo: JUN, version: 2 });
    expect(bounded.resolution).toEqual({ rule: 'later_valid_time', against: ['mem-paris'], decidedAt: AT });
    const asOfMarch = { validFrom: MAR, validTo: '2024-03-01T00:00:00.001Z' };
    expect(validOverlap(bounded, asOfMarch)).toBe(true);
    expect(validOverlap(bounded, { validFrom: JUN, validTo: null })).toBe(false);
  });

  it('bounds the incoming fact when it is the earlier one, never widening a validTo it already has', () => {
    const existing = hq('mem-berlin', 'Berlin', { validFrom: JUN });
    expect(settleConflicts(hq('mem-paris', 'Paris', { validFrom: JAN }), [existing], AT)).toMatchObject([
      { id: 'mem-paris', status: 'active', validTo: JUN },
    ]);
    const alreadyEnding = hq('mem-paris', 'Paris', { validFrom: JAN, validTo: '2024-09-01T00:00:00.000Z' });
    expect(settleConflicts(alreadyEnding, [existing], AT)).toMatchObject([{ id: 'mem-paris', validTo: JUN }]);
  });

  it('marks both sides disputed, each pointing at the other, when every rule ties', () => {
    const existing = hq('mem-berlin', 'Berlin');
    const incoming = hq('mem-paris', 'Paris');
    const revisions = settleConflicts(incoming, [existing], AT);
    expect(revisions).toMatchObject([
      { id: 'mem-berlin', status: 'disputed', version: 2, resolution: { rule: 'adjudication', against: ['mem-paris'] } },
      { id: 'mem-paris', status: 'disputed', version: 2, resolution: { rule: 'adjudication', against: ['mem-berlin'] } },
    ]);
  });

  it('adds a new party to a dispute already on record', () => {
    const berlin = hq('mem-berlin', 'Berlin', {
      status: 'disputed',
      version: 2,
      resolution: { rule: 'adjudication', against: ['mem-rome'], decidedAt: MAR },
    });
    const revisions = settleConflicts(hq('mem-paris', 'Paris'), [berlin], AT);
    expect(revisions).toMatchObject([
      { id: 'mem-berlin', status: 'disputed', version: 3, resolution: { against: ['mem-rome', 'mem-paris'], decidedAt: AT } },
      { id: 'mem-paris', status: 'disputed', version: 2, resolution: { against: ['mem-berlin'] } },
    ]);
  });

  it('settles against two existing facts, oldest first, and revises the incoming fact once in its final state', () => {
    const rome = hq('mem-rome', 'Rome', { validFrom: MAR, recordedAt: MAR });
    const berlin = hq('mem-berlin', 'Berlin', { validFrom: JAN, recordedAt: JAN });
    const incoming = hq('mem-paris', 'Paris', { validFrom: JAN, recordedAt: JUN });
    const revisions = settleConflicts(incoming, [rome, berlin], AT);
    expect(revisions).toEqual([
      {
        ...berlin,
        status: 'disputed',
        version: 2,
        revisedAt: AT,
        resolution: { rule: 'adjudication', against: ['mem-paris'], decidedAt: AT },
      },
      {
        ...incoming,
        status: 'disputed',
        validTo: MAR,
        version: 2,
        revisedAt: AT,
        resolution: { rule: 'later_valid_time', against: ['mem-berlin', 'mem-rome'], decidedAt: AT },
      },
    ]);
  });

  it('stops deciding once the incoming fact is superseded', () => {
    const berlin = hq('mem-berlin', 'Berlin', { sourceTrust: 'authoritative', recordedAt: JAN });
    const rome = hq('mem-rome', 'Rome', { sourceTrust: 'user', recordedAt: MAR });
    const revisions = settleConflicts(hq('mem-paris', 'Paris', { sourceTrust: 'certified' }), [rome, berlin], AT);
    expect(revisions).toMatchObject([{ id: 'mem-paris', status: 'superseded', resolution: { against: ['mem-berlin'] } }]);
  });

  it('revises nothing when there is no conflict', () => {
    const agreeing = hq('mem-berlin-2', 'berlin');
    expect(settleConflicts(agreeing, [hq('mem-berlin', 'Berlin')], AT)).toEqual([]);
  });

  it('is idempotent: settling the same incoming fact against its own revisions produces nothing new', () => {
    const cases: [MemoryRecord, MemoryRecord[]][] = [
      [hq('p', 'Paris', { sourceTrust: 'certified' }), [hq('b', 'Berlin')]],
      [hq('p', 'Paris'), [hq('b', 'Berlin', { sourceTrust: 'certified' })]],
      [hq('p', 'Paris', { validFrom: JUN }), [hq('b', 'Berlin')]],
      [hq('p', 'Paris'), [hq('b', 'Berlin', { validFrom: JUN })]],
      [hq('p', 'Paris'), [hq('b', 'Berlin')]],
      [hq('p', 'Paris', { recordedAt: JUN }), [hq('r', 'Rome', { validFrom: MAR, recordedAt: MAR }), hq('b', 'Berlin')]],
    ];
    for (const [incoming, current] of cases) {
      const first = settleConflicts(incoming, current, AT);
      expect(first).not.toEqual([]);
      const stored = [...current, ...first];
      expect(settleConflicts(incoming, stored, '2024-08-01T00:00:00.000Z')).toEqual([]);
      const revisedIncoming = first.find((r) => r.id === incoming.id) ?? incoming;
      expect(settleConflicts(revisedIncoming, stored, '2024-08-01T00:00:00.000Z')).toEqual([]);
    }
  });

  it('ignores an incoming fact that is no longer in play', () => {
    expect(settleConflicts(hq('p', 'Paris', { status: 'superseded', sourceTrust: 'authoritative' }), [hq('b', 'Berlin')], AT)).toEqual([]);
  });

  it('keeps revisions valid records', () => {
    const revisions = settleConflicts(hq('p', 'Paris'), [hq('b', 'Berlin'), hq('r', 'Rome', { validFrom: MAR })], AT);
    for (const revision of revisions) expect(MemoryRecord.parse(revision)).toEqual(revision);
  });
});

describe('settling, for any facts', () => {
  const instants = [JAN, MAR, JUN, '2024-09-01T00:00:00.000Z', '2024-12-01T00:00:00.000Z'];
  const arbitraryFact = fc
    .record({
      id: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'),
      value: fc.constantFrom('Berlin', 'Paris', 'berlin', 'Rome'),
      // Weighted towards facts that can conflict, so most runs settle something.
      attribute: fc.constantFrom('headquarters', 'headquarters', 'headquarters', 'HeadQuarters', 'ceo'),
      kind: fc.constantFrom('semantic' as const, 'semantic' as const, 'semantic' as const, 'episodic' as const),
      status: fc.constantFrom('active' as const, 'active' as const, 'disputed' as const, 'candidate' as const, 'superseded' as const),
      from: fc.integer({ min: 0, max: 2 }),
      span: fc.option(fc.integer({ min: 1, max: 2 }), { nil: null }),
      recordedAt: fc.constantFrom(...instants),
      confidence: fc.constantFrom(0.5, 0.9),
      sourceTrust: fc.constantFrom(...SourceTrust.options),
      correction: fc.option(fc.boolean(), { nil: undefined }),
      version: fc.integer({ min: 1, max: 3 }),
    })
    .map((f) =>
      fact('ACME', f.attribute, f.value, {
        id: f.id,
        kind: f.kind,
        status: f.status,
        validFrom: instants[f.from],
        validTo: f.span === null ? null : instants[f.from + f.span],
        recordedAt: f.recordedAt,
        confidence: f.confidence,
        sourceTrust: f.sourceTrust,
        version: f.version,
        ...(f.correction === undefined ? {} : { correction: f.correction }),
      }),
    );

  it('only ever moves records forward in version and never touches their content', () => {
    fc.assert(
      fc.property(arbitraryFact, fc.array(arbitraryFact, { minLength: 1, maxLength: 6 }), (incoming, current) => {
        const inputs = [incoming, ...current];
        for (const revision of settleConflicts(incoming, current, AT)) {
          const sameId = inputs.filter((r) => r.id === revision.id);
          expect(sameId.length).toBeGreaterThan(0);
          const base = sameId.reduce((a, b) => (b.version > a.version ? b : a));
          expect(revision.version).toBe(base.version + 1);
          expect(revision.content).toEqual(base.content);
          expect(revision.validFrom).toBe(base.validFrom);
          if (base.validTo !== null && revision.validTo !== null)
            expect(Date.parse(revision.validTo)).toBeLessThanOrEqual(Date.parse(base.validTo));
          expect(revision.revisedAt).toBe(AT);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('settles to a fixed point: settling again against the revisions changes nothing', () => {
    fc.assert(
      fc.property(arbitraryFact, fc.array(arbitraryFact, { minLength: 1, maxLength: 6 }), (incoming, current) => {
        const first = settleConflicts(incoming, current, AT);
        expect(settleConflicts(incoming, [...current, ...first], '2024-08-01T00:00:00.000Z')).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });
});

describe('settling by last write wins (the evaluation ablation without conflict rules)', () => {
  it('lets the later write supersede an earlier correction from a higher-trust source, and disputes nothing', () => {
    const corrected = hq('mem-berlin', 'Berlin', { sourceTrust: 'authoritative', correction: true, validFrom: MAR });
    const later = hq('mem-paris', 'Paris', { sourceTrust: 'external', recordedAt: JUN });
    expect(settleConflicts(later, [corrected], AT, 'last-write-wins')).toEqual([
      {
        ...corrected,
        status: 'superseded',
        version: 2,
        revisedAt: AT,
        resolution: { rule: 'last_write', against: ['mem-paris'], decidedAt: AT },
      },
    ]);
    // ELMA's rules decide the other way on the same records.
    expect(settleConflicts(later, [corrected], AT, 'rules')).toEqual([
      expect.objectContaining({
        id: 'mem-paris',
        status: 'superseded',
        resolution: expect.objectContaining({ rule: 'explicit_correction' }),
      }),
    ]);
  });

  it('supersedes instead of disputing a tie on every rule', () => {
    const first = hq('a', 'Berlin');
    const second = hq('b', 'Paris');
    expect(settleConflicts(second, [first], AT, 'rules').map((r) => r.status)).toEqual(['disputed', 'disputed']);
    expect(settleConflicts(second, [first], AT, 'last-write-wins')).toEqual([
      expect.objectContaining({ id: 'a', status: 'superseded', resolution: expect.objectContaining({ rule: 'last_write' }) }),
    ]);
  });
});
