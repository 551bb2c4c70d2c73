import { describe, expect, it } from 'vitest';
import { deletionClosure, type LineageNode } from './closure';
import { ErasureScopeInput, normalizeForFingerprint } from './erasure';

const extracted = (eventId: string, kind: 'episodic' | 'semantic' = 'episodic'): LineageNode => ({
  id: `${kind === 'episodic' ? 'mem_ep' : 'mem_se'}_${eventId}`,
  kind,
  rule: 'ingest.extract',
  sourceEventIds: [eventId],
  parentIds: [],
});
const derived = (id: string, parentIds: string[], sourceEventIds: string[] = []): LineageNode => ({
  id,
  kind: 'semantic',
  rule: 'api.explicit',
  sourceEventIds,
  parentIds,
});

describe('the deletion closure D*(m)', () => {
  it('holds the seed and every record derived from it, to any depth', () => {
    const nodes = [derived('m', []), derived('v1', ['m']), derived('v2', ['v1']), derived('v3', ['v2']), derived('other', [])];
    expect(deletionClosure(['m'], nodes).recordIds).toEqual(['m', 'v1', 'v2', 'v3']);
  });

  it('takes a view with several inputs as soon as one input is erased', () => {
    const nodes = [derived('a', []), derived('b', []), derived('summary', ['a', 'b'])];
    expect(deletionClosure(['b'], nodes).recordIds).toEqual(['b', 'summary']);
    expect(deletionClosure(['a'], nodes).recordIds).not.toContain('b');
  });

  it('erases the event an extracted record copies, and everything else derived from that event', () => {
    const nodes = [extracted('e1'), extracted('e1', 'semantic'), derived('note', [], ['e1']), extracted('e2')];
    const closure = deletionClosure(['mem_se_e1'], nodes);
    expect(closure.eventIds).toEqual(['e1']);
    expect(closure.recordIds.sort()).toEqual(['mem_ep_e1', 'mem_se_e1', 'note']);
  });

  it('does not erase the inputs of a derived record, only what derives from it', () => {
    const nodes = [extracted('e1'), derived('summary', ['mem_ep_e1'], ['e1'])];
    const closure = deletionClosure(['summary'], nodes);
    expect(closure.recordIds).toEqual(['summary']);
    expect(closure.eventIds).toEqual([]);
  });

  it('ends on a lineage cycle instead of hanging, and holds each record once', () => {
    const nodes = [derived('x', ['z']), derived('y', ['x']), derived('z', ['y']), derived('w', ['z', 'x'])];
    const closure = deletionClosure(['x'], nodes);
    expect(closure.recordIds.sort()).toEqual(['w', 'x', 'y', 'z']);
  });

  it('walks a long chain without recursion limits', () => {
    const nodes = Array.from({ length: 50_000 }, (_, i) => derived(`n${i}`, i === 0 ? [] : [`n${i - 1}`]));
    expect(deletionClosure(['n0'], nodes).recordIds).toHaveLength(50_000);
  });

  it('reports seeds it does not know, once', () => {
    expect(deletionClosure(['ghost', 'ghost', 'm'], [derived('m', [])])).toEqual({
      recordIds: ['m'],
      eventIds: [],
      unknownSeeds: ['ghost'],
    });
  });
});

describe('erasure requests', () => {
  it('accept each scope type and refuse an inverted time range', () => {
    for (const scope of [
      { type: 'records', recordIds: ['mem_1'] },
      { type: 'subject', subject: 'cust-42' },
      { type: 'time_range', from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z' },
      { type: 'content', text: '张伟的护照号码' },
      { type: 'fingerprint', fingerprint: 'a'.repeat(64) },
    ]) {
      expect(ErasureScopeInput.safeParse(scope).success).toBe(true);
    }
    expect(ErasureScopeInput.safeParse({ type: 'time_range', from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }).success).toBe(
      false,
    );
    expect(ErasureScopeInput.safeParse({ type: 'expired', asOf: '2026-02-01T00:00:00Z' }).success).toBe(false);
    expect(ErasureScopeInput.safeParse({ type: 'records', recordIds: [] }).success).toBe(false);
  });

  it('fingerprint trivial variants of the same text alike', () => {
    expect(normalizeForFingerprint('  Alice  prefers\tTEA ')).toBe(normalizeForFingerprint('alice prefers tea'));
    expect(normalizeForFingerprint('ＡＢＣ１２３')).toBe('abc123');
    expect(normalizeForFingerprint('alice prefers tea')).not.toBe(normalizeForFingerprint('alice prefers coffee'));
  });
});
