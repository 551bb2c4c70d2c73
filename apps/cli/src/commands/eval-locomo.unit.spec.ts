import { describe, expect, it } from 'vitest';
import { parseSessionDateTime, recallAt, reciprocalRank, scoreRetrieval, summarise, type ScoredQuestion } from '../eval/locomo-metrics';

describe('LoCoMo session times', () => {
  it('reads an afternoon time as the 24-hour clock, in UTC', () => {
    expect(parseSessionDateTime('1:56 pm on 8 May, 2023')).toBe('2023-05-08T13:56:00.000Z');
  });

  it('reads 12 am as midnight and 12 pm as noon', () => {
    expect(parseSessionDateTime('12:06 am on 11 November, 2022')).toBe('2022-11-11T00:06:00.000Z');
    expect(parseSessionDateTime('12:30 pm on 1 January, 2024')).toBe('2024-01-01T12:30:00.000Z');
  });

  it('accepts two-digit hours and days, and any letter case', () => {
    expect(parseSessionDateTime('10:04 AM on 19 December, 2023')).toBe('2023-12-19T10:04:00.000Z');
  });

  it('refuses text that is not a session time, and dates that do not exist', () => {
    expect(() => parseSessionDateTime('8 May 2023')).toThrow(RangeError);
    expect(() => parseSessionDateTime('1:56 pm on 8 Smarch, 2023')).toThrow(RangeError);
    expect(() => parseSessionDateTime('13:10 pm on 8 May, 2023')).toThrow(RangeError);
    expect(() => parseSessionDateTime('9:00 am on 31 April, 2023')).toThrow(RangeError);
  });
});

describe('evidence recall at k', () => {
  // Evidence e1 at rank 2, e2 at rank 7, e3 absent.
  const ranked = ['x1', 'e1', 'x2', 'x3', 'x4', 'x5', 'e2', 'x6'];
  const evidence = ['e1', 'e2', 'e3'];

  it('is the share of the evidence among the first k hits', () => {
    expect(recallAt(1, ranked, evidence)).toBe(0);
    expect(recallAt(5, ranked, evidence)).toBeCloseTo(1 / 3);
    expect(recallAt(10, ranked, evidence)).toBeCloseTo(2 / 3);
  });

  it('counts an evidence turn listed twice once', () => {
    expect(recallAt(5, ['e1'], ['e1', 'e1', 'e2'])).toBe(0.5);
  });

  it('is undefined for a question without evidence', () => {
    expect(() => recallAt(5, ranked, [])).toThrow(RangeError);
  });
});

describe('reciprocal rank', () => {
  it('is one over the rank of the first evidence hit', () => {
    expect(reciprocalRank(['x', 'y', 'e2', 'e1'], ['e1', 'e2'])).toBeCloseTo(1 / 3);
    expect(reciprocalRank(['e1'], ['e1'])).toBe(1);
  });

  it('is 0 when no evidence is within the depth', () => {
    const ranked = [...Array.from({ length: 20 }, (_, i) => `x${i}`), 'e1'];
    expect(reciprocalRank(ranked, ['e1'])).toBe(0);
    expect(reciprocalRank(ranked, ['e1'], 21)).toBeCloseTo(1 / 21);
    expect(reciprocalRank([], ['e1'])).toBe(0);
  });

  it('comes with recall at 5, 10 and 20 in one score', () => {
    const ranked = Array.from({ length: 20 }, (_, i) => (i === 5 ? 'a' : i === 14 ? 'b' : `x${i}`));
    expect(scoreRetrieval(ranked, ['a', 'b'])).toEqual({ recall5: 0, recall10: 0.5, recall20: 1, reciprocalRank: 1 / 6 });
  });
});

describe('summary per category and route', () => {
  const score = (recall5: number, reciprocalRank: number) => ({ recall5, recall10: recall5, recall20: recall5, reciprocalRank });
  const scored: ScoredQuestion[] = [
    { category: 2, route: 'bm25', score: score(1, 1) },
    { category: 1, route: 'bm25', score: score(0, 0) },
    { category: 1, route: 'bm25', score: score(0.5, 0.5) },
    { category: 1, route: 'dense', score: score(1, 0.25) },
    { category: 2, route: 'dense', score: score(0, 0) },
  ];

  it('averages each category per route, categories in order and routes as they came', () => {
    const rows = summarise(scored);
    expect(rows.map((r) => `${r.category}/${r.route}/${r.n}`)).toEqual([
      '1/bm25/2',
      '1/dense/1',
      '2/bm25/1',
      '2/dense/1',
      'all/bm25/3',
      'all/dense/2',
    ]);
    expect(rows[0]).toMatchObject({ recall5: 0.25, recall10: 0.25, recall20: 0.25, mrr: 0.25 });
    expect(rows[1]).toMatchObject({ recall5: 1, mrr: 0.25 });
  });

  it('weighs every question the same in the overall row, not every category', () => {
    const all = summarise(scored).find((r) => r.category === 'all' && r.route === 'bm25');
    // Questions: (0 + 0.5 + 1) / 3 = 0.5; the mean of the category means would be (0.25 + 1) / 2 = 0.625.
    expect(all).toMatchObject({ n: 3, recall5: 0.5, mrr: 0.5 });
  });

  it('has no rows without questions', () => {
    expect(summarise([])).toEqual([]);
  });
});
