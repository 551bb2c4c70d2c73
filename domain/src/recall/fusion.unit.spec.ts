import { describe, expect, it } from 'vitest';
import { reciprocalRankFusion } from './fusion';

describe('reciprocal rank fusion', () => {
  it('ranks a document found by both routes above documents found by one', () => {
    const fused = reciprocalRankFusion([
      ['a', 'b', 'c'],
      ['d', 'b', 'e'],
    ]);
    expect(fused[0].id).toBe('b');
    expect(fused[0].score).toBeCloseTo(2 / 62);
    expect(fused.map((f) => f.id).sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
  });
});
