import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ValidationFailed } from '../shared/errors';
import { AuditEntry, GENESIS_HASH, canonicalJson, chainEntry, matchesAuditFilter, verifyChain, type AuditDraft } from './audit';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const draft = (overrides: Partial<AuditDraft> = {}): AuditDraft => ({
  tenant: 't1',
  actor: 'agent-1',
  subject: 'alice',
  operation: 'read',
  resourceIds: ['m1', 'm2'],
  decision: { effect: 'allow', rule: 'policy.read' },
  requestId: 'req-1',
  time: '2025-01-01T00:00:00.000Z',
  ...overrides,
});

function chainOf(drafts: AuditDraft[]): AuditEntry[] {
  const entries: AuditEntry[] = [];
  for (const d of drafts) entries.push(chainEntry(d, entries.at(-1), sha256));
  return entries;
}

const five = () => chainOf(Array.from({ length: 5 }, (_, i) => draft({ requestId: `req-${i}` })));

describe('canonical JSON', () => {
  it('sorts keys at every level and keeps array order, without whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, 1, { z: true, y: null }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[3,1,{"y":null,"z":true}]},"b":1}',
    );
  });

  it('gives the same text for the same value whatever the key insertion order', () => {
    expect(canonicalJson({ x: 1, y: [1, 2] })).toBe(canonicalJson({ y: [1, 2], x: 1 }));
  });

  it('serialises numbers and strings as ECMAScript does', () => {
    expect(canonicalJson([1e21, 0.1, -0, 'é"\n'])).toBe('[1e+21,0.1,0,"é\\"\\n"]');
  });

  it('omits undefined properties', () => {
    expect(canonicalJson({ a: undefined, b: 2 })).toBe('{"b":2}');
  });

  it.each([
    ['NaN', { n: Number.NaN }],
    ['Infinity', [Number.POSITIVE_INFINITY]],
    ['a bigint', { n: 1n }],
    ['a Date', { d: new Date(0) }],
    ['undefined in an array', [undefined]],
  ])('rejects %s', (_, value) => {
    expect(() => canonicalJson(value)).toThrow(expect.objectContaining({ code: 'AUDIT.NOT_CANONICAL_JSON' }));
  });

  it('rejects a cycle', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(expect.objectContaining({ code: 'AUDIT.NOT_CANONICAL_JSON' }));
  });
});

describe('chaining audit entries', () => {
  it('starts a chain at seq 0 linked to the genesis hash', () => {
    // Given an empty chain, when the first entry is chained
    const entry = chainEntry(draft(), undefined, sha256);
    // Then it sits at seq 0 after the genesis hash, and its hash covers everything else
    expect(entry.seq).toBe(0);
    expect(entry.prevHash).toBe(GENESIS_HASH);
    const { hash, ...body } = entry;
    expect(hash).toBe(sha256(canonicalJson(body)));
    expect(AuditEntry.parse(entry)).toEqual(entry);
  });

  it('links each entry to the hash of the one before', () => {
    const [first, second] = chainOf([draft(), draft({ operation: 'write' })]);
    expect(second.seq).toBe(1);
    expect(second.prevHash).toBe(first.hash);
    expect(second.hash).not.toBe(first.hash);
  });

  it('rejects a draft that does not fit the schema', () => {
    expect(() => chainEntry(draft({ resourceIds: [''] }), undefined, sha256)).toThrow(ValidationFailed);
    expect(() => chainEntry({ ...draft(), content: 'secret' } as AuditDraft, undefined, sha256)).toThrow(ValidationFailed);
  });
});

describe('verifying a chain', () => {
  it('accepts an intact chain and counts its entries', () => {
    expect(verifyChain(five(), sha256)).toEqual({ ok: true, checked: 5 });
  });

  it('accepts an empty chain', () => {
    expect(verifyChain([], sha256)).toEqual({ ok: true, checked: 0 });
  });

  it('names an edited entry as a hash mismatch at its seq', () => {
    // Given a chain whose entry 2 had its resource ids changed after the fact
    const entries = five();
    entries[2] = { ...entries[2], resourceIds: ['m1'] };
    // When it is verified, then the break is at 2 and the entries before it were fine
    expect(verifyChain(entries, sha256)).toEqual({ ok: false, checked: 2, firstBroken: { seq: 2, reason: 'hash_mismatch' } });
  });

  it('names the entry after a rehashed forgery as a broken link', () => {
    // Given entry 2 was edited and its own hash recomputed to hide the edit
    const entries = five();
    const { hash: _, ...body } = { ...entries[2], actor: 'someone-else' };
    entries[2] = { ...body, hash: sha256(canonicalJson(body)) };
    // Then entry 3 no longer links to it
    expect(verifyChain(entries, sha256)).toMatchObject({ ok: false, firstBroken: { seq: 3, reason: 'prev_hash_mismatch' } });
  });

  it('names a removed entry as a gap at the missing seq', () => {
    const entries = five();
    entries.splice(1, 1);
    expect(verifyChain(entries, sha256)).toEqual({ ok: false, checked: 1, firstBroken: { seq: 1, reason: 'seq_gap' } });
  });

  it('names swapped entries as a gap', () => {
    const entries = five();
    [entries[1], entries[2]] = [entries[2], entries[1]];
    expect(verifyChain(entries, sha256)).toMatchObject({ ok: false, firstBroken: { seq: 1, reason: 'seq_gap' } });
  });

  it('names a chain that does not start at the genesis hash', () => {
    const entries = five();
    const { hash: _, ...body } = { ...entries[0], prevHash: 'f'.repeat(64) };
    entries[0] = { ...body, hash: sha256(canonicalJson(body)) };
    expect(verifyChain(entries, sha256)).toMatchObject({ ok: false, firstBroken: { seq: 0, reason: 'prev_hash_mismatch' } });
  });

  it('names an entry that no longer parses, including one with an added key', () => {
    const broken = five() as unknown[];
    broken[3] = { garbage: true };
    expect(verifyChain(broken, sha256)).toEqual({ ok: false, checked: 3, firstBroken: { seq: 3, reason: 'unparseable' } });

    const extended = five() as unknown[];
    extended[4] = { ...(extended[4] as AuditEntry), note: 'smuggled' };
    expect(verifyChain(extended, sha256)).toMatchObject({ firstBroken: { seq: 4, reason: 'unparseable' } });
  });

  it('verifies a consecutive part of a chain from the link it starts after', () => {
    // Given entries 2..4 of a chain, as an export of a time window holds them
    const part = five().slice(2);
    const after = { seq: 1, hash: part[0].prevHash };
    // Then they verify from there, and an edit among them is named at its own seq
    expect(verifyChain(part, sha256, after)).toEqual({ ok: true, checked: 3 });
    part[1] = { ...part[1], operation: 'erase' };
    expect(verifyChain(part, sha256, after)).toEqual({ ok: false, checked: 1, firstBroken: { seq: 3, reason: 'hash_mismatch' } });
    // And from the genesis the same part is a gap at seq 0
    expect(verifyChain(five().slice(2), sha256)).toMatchObject({ ok: false, firstBroken: { seq: 0, reason: 'seq_gap' } });
  });
});

describe('filtering audit entries', () => {
  const entry = chainEntry(draft({ time: '2025-01-01T10:00:00.000Z' }), undefined, sha256);

  it('treats from as inclusive and to as exclusive, comparing instants', () => {
    expect(matchesAuditFilter(entry, { from: '2025-01-01T10:00:00Z' })).toBe(true);
    expect(matchesAuditFilter(entry, { to: '2025-01-01T10:00:00.000Z' })).toBe(false);
    expect(matchesAuditFilter(entry, { from: '2025-01-01T12:00:00+02:00', to: '2025-01-01T13:00:00+02:00' })).toBe(true);
  });

  it('requires every given condition', () => {
    expect(matchesAuditFilter(entry, { actor: 'agent-1', subject: 'alice', resourceId: 'm2', operation: 'read' })).toBe(true);
    expect(matchesAuditFilter(entry, { actor: 'agent-1', operation: 'write' })).toBe(false);
    expect(matchesAuditFilter(entry, { resourceId: 'm3' })).toBe(false);
  });
});
