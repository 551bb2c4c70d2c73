import { describe, expect, it } from 'vitest';
import { rankOf, rankedIds, summarise, type Answer } from './metrics';
import { shortfalls } from './targets';

const answer = (direction: Answer['direction'], rank: number | null, variant = 'shipped'): Answer => ({
  split: 'open',
  tenant: 't',
  question: `q-${direction}-${rank}`,
  direction,
  variant,
  rank,
});

describe('bilingual recall metrics', () => {
  it('ranks recall items by score, best first, whatever their prompt order (best last)', () => {
    const items = [
      { id: 'c', score: 0.2 },
      { id: 'b', score: 0.5 },
      { id: 'a', score: 0.9 },
    ];
    expect(rankedIds(items)).toEqual(['a', 'b', 'c']);
  });

  it('puts the later of two equal scores first, as the prompt places the better nearer the question', () => {
    expect(
      rankedIds([
        { id: 'x', score: 0.5 },
        { id: 'y', score: 0.5 },
      ]),
    ).toEqual(['y', 'x']);
  });

  it('finds the rank of the first expected memory, and none when recall missed them all', () => {
    expect(rankOf(['a', 'b', 'c'], ['c', 'b'])).toBe(2);
    expect(rankOf(['a', 'b'], ['z'])).toBeNull();
  });

  it('gives top-1, top-3 and MRR per direction and for cross- and same-language questions', () => {
    const rows = summarise([answer('en→zh', 1), answer('en→zh', 3), answer('zh→en', 4), answer('zh→en', null), answer('en→en', 2)]);
    const row = (group: string) => rows.find((r) => r.group === group)!;
    expect(row('en→zh')).toMatchObject({ n: 2, top1: 0.5, top3: 1 });
    expect(row('en→zh').mrr).toBeCloseTo((1 + 1 / 3) / 2);
    expect(row('cross')).toMatchObject({ n: 4, top1: 0.25, top3: 0.5 });
    expect(row('cross').mrr).toBeCloseTo((1 + 1 / 3 + 1 / 4) / 4);
    expect(row('same')).toMatchObject({ n: 1, top1: 0, top3: 1, mrr: 0.5 });
    expect(rows.find((r) => r.group === 'zh→zh')).toBeUndefined();
  });

  it('reports each target recall as shipped misses, and no other variant', () => {
    const rows = summarise([
      ...Array.from({ length: 9 }, () => answer('en→zh', 1)),
      answer('zh→en', null),
      ...Array.from({ length: 19 }, () => answer('zh→zh', 1)),
      answer('en→en', 5),
      answer('en→zh', null, 'bm25'),
    ]);
    // Exactly on both targets (9 of 10 across, 19 of 20 within): met; BM25's miss is not recall as shipped.
    expect(shortfalls(rows)).toEqual([]);
    const worse = summarise([answer('en→zh', 1), answer('zh→en', null), answer('en→en', 1)]);
    expect(shortfalls(worse)).toEqual(['open cross-language top-3 50.0 % < 90 % (2 questions)']);
  });
});
