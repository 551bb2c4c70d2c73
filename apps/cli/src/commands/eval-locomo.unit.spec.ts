import { describe, expect, it } from 'vitest';
import {
  gains,
  parseSessionDateTime,
  recallAt,
  reciprocalRank,
  scoreRetrieval,
  summarise,
  type ScoredQuestion,
} from '../eval/locomo-metrics';
import { GAIN_PAIRS, VARIANTS, unavailable } from '../eval/locomo-variants';

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

describe('intervals and gains per variant', () => {
  const bootstrap = { resamples: 500, seed: 3, level: 0.95 };
  const score = (hit: number) => ({ recall5: hit, recall10: hit, recall20: hit, reciprocalRank: hit });
  // 40 questions in two categories; "better" finds what "base" finds plus every third question.
  const scored: ScoredQuestion[] = Array.from({ length: 40 }, (_, i) => {
    const base = i % 2 === 0 ? 1 : 0;
    const better = i % 3 === 0 ? 1 : base;
    const common = { question: `q${i}`, category: i < 20 ? 1 : 4 };
    return [
      { ...common, route: 'base', score: score(base) },
      { ...common, route: 'better', score: score(better) },
    ];
  }).flat();

  it('gives every row the interval of its own questions, around its R@10', () => {
    const rows = summarise(scored, bootstrap);
    expect(rows.map((r) => `${r.category}/${r.route}/${r.n}`)).toEqual([
      '1/base/20',
      '1/better/20',
      '4/base/20',
      '4/better/20',
      'all/base/40',
      'all/better/40',
    ]);
    for (const row of rows) {
      expect(row.recall10Interval!.low).toBeLessThanOrEqual(row.recall10);
      expect(row.recall10Interval!.high).toBeGreaterThanOrEqual(row.recall10);
    }
    // Fewer questions, wider interval.
    const width = (r: (typeof rows)[number]) => r.recall10Interval!.high - r.recall10Interval!.low;
    expect(width(rows[0])).toBeGreaterThan(width(rows[4]));
    expect(summarise(scored, bootstrap)).toEqual(rows);
    expect(summarise(scored)[0].recall10Interval).toBeUndefined();
  });

  it('pairs questions for a gain, and leaves out pairs that did not run', () => {
    const [gain, ...rest] = gains(
      scored,
      [
        ['better', 'base'],
        ['fused', 'base'],
      ],
      bootstrap,
    );
    expect(rest).toEqual([]);
    // base hits 20 of 40; better adds the odd multiples of 3 below 40 (3, 9, 15, 21, 27, 33, 39): 7 more.
    expect(gain).toMatchObject({ route: 'better', over: 'base', n: 40 });
    expect(gain.mean).toBeCloseTo(7 / 40);
    expect(gain.low).toBeGreaterThan(0);
  });

  it('needs the question of every score to pair them', () => {
    expect(() => gains([{ category: 1, route: 'a', score: score(1) }], [['a', 'a']], bootstrap)).toThrow(RangeError);
  });
});

describe('the variants compared', () => {
  const all = { textAnalysis: true, fusion: true, smoothing: true, evidence: true, semantic: true };

  it('add one BM25 improvement per row, then the dense and fused routes, then each evidence step alone', () => {
    expect(VARIANTS.map((v) => v.name)).toEqual([
      'bm25',
      '+stop',
      '+stem',
      '+dates',
      '+smooth',
      'dense',
      'fused-rrf',
      'fused',
      'fused+smooth',
      '+conversation',
      '+conversation@3x',
      '+spread',
      '+expansion',
      '+feedback',
    ]);
    // Every step row is fused+smooth plus that one step, so its gain over fused+smooth is the step's.
    for (const step of VARIANTS.slice(9)) {
      expect(step).toMatchObject({ routes: 'both', analysis: 'full', fusion: 'normalised', smoothing: true });
      expect(Object.keys(step.steps!).filter((k) => k !== 'pool')).toHaveLength(1);
      expect(GAIN_PAIRS).toContainEqual([step.name, 'fused+smooth']);
    }
    const names = new Set(VARIANTS.map((v) => v.name));
    for (const [route, over] of GAIN_PAIRS) expect(names.has(route) && names.has(over)).toBe(true);
  });

  it('say what is missing when a variant cannot run', () => {
    const plain = VARIANTS[0];
    const fusedSmooth = VARIANTS.find((v) => v.name === 'fused+smooth')!;
    expect(unavailable(plain, { ...all, textAnalysis: false, semantic: false })).toBeUndefined();
    expect(unavailable(fusedSmooth, all)).toBeUndefined();
    expect(unavailable(fusedSmooth, { ...all, semantic: false, smoothing: false })).toBe(
      'the embedder is not semantic; smoothing not available',
    );
  });
});
