import { describe, expect, it } from 'vitest';
import type { ScriptGroup } from '../text/script';
import { MINMAX_MIN_CANDIDATES, RRF_K, fuse, normaliseScores, reciprocalRankFusion, type Fusion } from './fusion';

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

describe('fuse', () => {
  const routes = {
    bm25: [
      { id: 'a', score: 12 },
      { id: 'b', score: 4 },
      { id: 'c', score: 2 },
    ],
    dense: [
      { id: 'c', score: 0.9 },
      { id: 'd', score: 0.85 },
      { id: 'e', score: 0.6 },
    ],
  };
  const normalised: Fusion = { method: 'normalised', weights: { bm25: 0.5, dense: 0.5 }, denseFloor: 0.7 };

  it('without a fusion, is plain reciprocal rank fusion with the routes’ ranks', () => {
    const fused = fuse(routes);
    // b and d tie (both second in a route): first appearance wins.
    expect(fused.map((f) => f.id)).toEqual(['c', 'a', 'b', 'd', 'e']);
    expect(fused[0]).toEqual({
      id: 'c',
      score: 1 / (RRF_K + 3) + 1 / (RRF_K + 1),
      bm25Rank: 3,
      vectorRank: 1,
      contributions: { bm25: 1 / (RRF_K + 3), dense: 1 / (RRF_K + 1) },
    });
  });

  it('normalised: scales a route of few candidates from its zero point (BM25 0, dense the floor), a dense hit under the floor adding nothing', () => {
    const fused = fuse(routes, normalised);
    // bm25 from 0: a 1, b 1/3, c 1/6; dense from the floor 0.7 (e under it): c 1, d 0.75.
    expect(fused.map((f) => f.id)).toEqual(['c', 'a', 'd', 'b']);
    expect(fused.map((f) => f.score)).toEqual([0.5 / 6 + 0.5, 0.5, 0.375, 0.5 / 3].map((x) => expect.closeTo(x, 10)));
    expect(fused.find((f) => f.id === 'e')).toBeUndefined();
  });

  it('says what each route added: the contributions sum to the score, and a route that did not find a hit adds none', () => {
    const byId = new Map(fuse(routes, normalised).map((f) => [f.id, f]));
    expect(byId.get('c')!.contributions).toEqual({ bm25: expect.closeTo(0.5 / 6, 10), dense: 0.5 });
    expect(byId.get('a')!.contributions).toEqual({ bm25: 0.5 });
    expect(byId.get('d')!.contributions).toEqual({ dense: expect.closeTo(0.375, 10) });
    for (const f of byId.values()) expect((f.contributions.bm25 ?? 0) + (f.contributions.dense ?? 0)).toBeCloseTo(f.score, 12);
  });

  it('normalised: scales a route of many candidates by min-max, its weakest candidate adding nothing', () => {
    const many = Array.from({ length: MINMAX_MIN_CANDIDATES }, (_, i) => ({ id: `m${i}`, score: 20 - i }));
    const scores = new Map(fuse({ bm25: many, dense: [] }, normalised).map((f) => [f.id, f.score]));
    expect(scores.get('m0')).toBe(0.5);
    expect(scores.get(`m${MINMAX_MIN_CANDIDATES - 1}`)).toBe(0);
    expect(normaliseScores([4, 3, 2], 'minmax')).toEqual([1, 0.5, 0]);
  });

  it('keeps the second of two close dense hits in play (a small tenant: e5 cosines 0.826 and 0.805, floor 0.75)', () => {
    const fused = fuse(
      {
        bm25: [],
        dense: [
          { id: 'zh', score: 0.826 },
          { id: 'en', score: 0.805 },
        ],
      },
      { ...normalised, denseFloor: 0.75 },
    );
    expect(fused.find((f) => f.id === 'en')!.score).toBeCloseTo(0.5 * (0.055 / 0.076), 6);
  });

  it('normalised by the maximum keeps the raw ratios', () => {
    const fused = fuse(routes, { ...normalised, normalisation: 'max' });
    expect(new Map(fused.map((f) => [f.id, f.score])).get('c')).toBeCloseTo(0.5 * (2 / 12) + 0.5);
    expect(normaliseScores([4, 2], 'max')).toEqual([1, 0.5]);
    expect(normaliseScores([3, 3])).toEqual([1, 1]);
    expect(normaliseScores([])).toEqual([]);
  });

  it('weights move the ranking towards a route', () => {
    const dense = fuse(routes, { ...normalised, weights: { bm25: 0.2, dense: 0.8 } });
    expect(dense[0].id).toBe('c');
    const lexical = fuse(routes, { ...normalised, weights: { bm25: 0.8, dense: 0.2 } });
    expect(lexical[0].id).toBe('a');
  });

  it('rrf with a fusion: weighted ranks, and the floor applies too', () => {
    const fused = fuse(routes, { ...normalised, method: 'rrf', weights: { bm25: 1, dense: 2 } });
    expect(fused[0]).toEqual({
      id: 'c',
      score: 1 / (RRF_K + 3) + 2 / (RRF_K + 1),
      bm25Rank: 3,
      vectorRank: 1,
      contributions: { bm25: 1 / (RRF_K + 3), dense: 2 / (RRF_K + 1) },
    });
    expect(fused.map((f) => f.id)).not.toContain('e');
  });

  it('works with one route empty (a query with no words the index knows, or no vector)', () => {
    expect(fuse({ bm25: [], dense: routes.dense }, normalised).map((f) => f.id)).toEqual(['c', 'd']);
    expect(fuse({ bm25: routes.bm25, dense: [] }, normalised).map((f) => f.score)).toEqual(
      [0.5, 0.5 / 3, 0.5 / 6].map((x) => expect.closeTo(x, 10)),
    );
  });
});

describe('fusion by kind of writing', () => {
  const normalised: Fusion = { method: 'normalised', weights: { bm25: 0.5, dense: 0.5 }, denseFloor: 0.75 };
  // An English question over a tenant writing in both languages: English memories sit at 0.80-0.85 with a
  // topic word in common; the Chinese answer stands out among the Chinese (0.72 over 0.60-0.66) but is below
  // every English cosine and the floor.
  const english = Array.from({ length: 12 }, (_, i) => ({ id: `en${i}`, score: 0.85 - i * 0.005 }));
  const chinese = [{ id: 'zh-answer', score: 0.72 }, ...Array.from({ length: 11 }, (_, i) => ({ id: `zh${i}`, score: 0.66 - i * 0.005 }))];
  const dense = [...english, ...chinese];
  const bm25 = [
    { id: 'en3', score: 6 },
    { id: 'en5', score: 5 },
  ];
  const scripts = new Map<string, ScriptGroup>([
    ...english.map((h) => [h.id, 'spaced'] as const),
    ...chinese.map((h) => [h.id, 'unspaced'] as const),
  ]);

  it('ranks the other language’s clear answer among the first, where plain fusion drops it under the floor', () => {
    const plain = fuse({ bm25, dense }, normalised).map((f) => f.id);
    expect(plain).not.toContain('zh-answer');
    const byScript = fuse({ bm25, dense }, normalised, scripts).map((f) => f.id);
    expect(byScript.indexOf('zh-answer')).toBeLessThan(2);
  });

  it('keeps each candidate’s rank in each route', () => {
    const hit = fuse({ bm25, dense }, normalised, scripts).find((f) => f.id === 'en3')!;
    expect(hit).toMatchObject({ bm25Rank: 1, vectorRank: 4 });
  });

  it('says what each route added, scaled as its group was: the contributions still sum to the score', () => {
    for (const hit of fuse({ bm25, dense }, normalised, scripts)) {
      expect((hit.contributions.bm25 ?? 0) + (hit.contributions.dense ?? 0)).toBeCloseTo(hit.score, 12);
    }
    const answer = fuse({ bm25, dense }, normalised, scripts).find((f) => f.id === 'zh-answer')!;
    expect(answer.contributions).toEqual({ dense: answer.score });
  });

  it('weighs a group whose best match does not stand out below the group that has a clear answer', () => {
    // The Chinese group is flat: its best is one of many alike, the English best stands out.
    const flat = Array.from({ length: 12 }, (_, i) => ({ id: `zh${i}`, score: 0.7 - (i % 2) * 0.01 }));
    const standing = [{ id: 'en-answer', score: 0.9 }, ...english.slice(1)];
    const fused = fuse(
      { bm25: [], dense: [...standing, ...flat] },
      normalised,
      new Map([...standing.map((h) => [h.id, 'spaced'] as const), ...flat.map((h) => [h.id, 'unspaced'] as const)]),
    );
    expect(fused[0].id).toBe('en-answer');
    expect(fused[1].score).toBeLessThan(fused[0].score);
  });

  it('is plain fusion when only one group has enough dense hits to calibrate', () => {
    const few = [...english, ...chinese.slice(0, MINMAX_MIN_CANDIDATES - 1)];
    expect(fuse({ bm25, dense: few }, normalised, scripts)).toEqual(fuse({ bm25, dense: few }, normalised));
    // One language only (an English tenant): exactly what plain fusion gives.
    expect(fuse({ bm25, dense: english }, normalised, scripts)).toEqual(fuse({ bm25, dense: english }, normalised));
  });

  it('is plain fusion for reciprocal rank fusion', () => {
    const rrf: Fusion = { ...normalised, method: 'rrf' };
    expect(fuse({ bm25, dense }, rrf, scripts)).toEqual(fuse({ bm25, dense }, rrf));
  });
});
