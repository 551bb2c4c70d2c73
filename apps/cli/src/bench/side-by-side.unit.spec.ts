import { describe, expect, it } from 'vitest';
import { orderOf, permutations, recallTargets, sideBySide } from './side-by-side';

describe('side-by-side order', () => {
  it('alternates two contenders query by query', () => {
    expect([0, 1, 2, 3].map((i) => orderOf(i, 2))).toEqual([
      [0, 1],
      [1, 0],
      [0, 1],
      [1, 0],
    ]);
  });

  it('over n! queries, runs each contender first and before each other one equally often', () => {
    for (const n of [2, 3, 4]) {
      const cycle = permutations(n).length;
      expect(new Set(permutations(n).map((p) => p.join())).size).toBe(cycle);
      const first = new Array(n).fill(0);
      const before = Array.from({ length: n }, () => new Array(n).fill(0));
      for (let i = 0; i < cycle; i++) {
        const order = orderOf(i, n);
        expect([...order].sort()).toEqual(Array.from({ length: n }, (_, k) => k));
        first[order[0]] += 1;
        order.forEach((a, at) => order.slice(at + 1).forEach((b) => (before[a][b] += 1)));
      }
      expect(first).toEqual(new Array(n).fill(cycle / n));
      for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) if (a !== b) expect(before[a][b]).toBe(cycle / 2);
    }
  });

  it('times each contender on each query in that order, waiting for its work to finish', async () => {
    const calls: string[] = [];
    const contender = (name: string, ms: number) => ({
      name,
      run: async (query: number) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        calls.push(`${name}${query}`);
      },
    });
    const samples = await sideBySide([contender('a', 1), contender('b', 25)], [7, 8, 9], 1);
    expect(calls).toEqual(['b7', 'a7', 'a8', 'b8', 'b9', 'a9']);
    expect(samples[0]).toHaveLength(3);
    expect(Math.min(...samples[1])).toBeGreaterThanOrEqual(20);
    expect(Math.max(...samples[0])).toBeLessThan(Math.min(...samples[1]));
  });
});

describe('recall targets', () => {
  it('are the issue ones at 10k, 100k and 1M, and on the line between', () => {
    expect(recallTargets(10_000)).toEqual({ floorRatio: 2 });
    expect(recallTargets(100_000)).toEqual({ floorRatio: 1.5, p95Ms: 8 });
    expect(recallTargets(1_000_000).p95Ms).toBeCloseTo(25, 9);
    expect(recallTargets(300_000).p95Ms).toBeGreaterThan(13);
    expect(recallTargets(300_000).p95Ms).toBeLessThan(14.5);
  });
});
