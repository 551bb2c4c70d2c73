import { describe, expect, it } from 'vitest';
import { estimateTokens } from '../text/tokenize';
import { packByMarginalUtility, type PackCandidate } from './packing';

const unit = (...xs: number[]) => {
  const v = Float32Array.from(xs);
  const n = Math.hypot(...xs);
  return v.map((x) => x / n);
};
const candidate = (id: string, relevance: number, vector: Float32Array, text = `memory ${id}`): PackCandidate => ({
  id,
  text,
  vector,
  relevance,
  confidence: 1,
  ageDays: 0,
});

describe('budgeted packing', () => {
  it('never exceeds the token budget', () => {
    const pool = Array.from({ length: 50 }, (_, i) => candidate(`m${i}`, 1 - i / 100, unit(1, i, 0), 'word '.repeat(20)));
    const packed = packByMarginalUtility(pool, 100);
    expect(packed.reduce((sum, p) => sum + p.tokens, 0)).toBeLessThanOrEqual(100);
    expect(packed.length).toBeGreaterThan(0);
  });

  it('prefers a distinct item over a near-duplicate of one already packed', () => {
    const packed = packByMarginalUtility(
      [candidate('a', 1, unit(1, 0, 0)), candidate('a-copy', 0.95, unit(1, 0.01, 0)), candidate('b', 0.6, unit(0, 1, 0))],
      // Room for a and one more: the near-duplicate would fit, but the distinct item earns more.
      estimateTokens('memory a') + estimateTokens('memory a-copy'),
    );
    expect(packed.map((p) => p.id)).toEqual(['a', 'b']);
  });

  it('stops when the best remaining gain is not positive', () => {
    const packed = packByMarginalUtility([candidate('a', 1, unit(1, 0)), candidate('irrelevant', 0, unit(0, 1))], 1000);
    expect(packed.map((p) => p.id)).toEqual(['a']);
  });
});
