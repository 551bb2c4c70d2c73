import { describe, expect, it } from 'vitest';
import { mergeByRank } from './floor';

describe("the floor's merge of its two routes", () => {
  it('ranks a rowid both routes found above those only one found, by reciprocal rank', () => {
    // 3: 1/63 + 1/61; 1: 1/61; 2 and 4: 1/62 each (2 seen first).
    expect(
      mergeByRank([
        [1, 2, 3],
        [3, 4],
      ]),
    ).toEqual([3, 1, 2, 4]);
  });

  it('keeps the order of a single route, and of the first route on ties', () => {
    expect(mergeByRank([[5, 6, 7], []])).toEqual([5, 6, 7]);
    expect(mergeByRank([[8], [9]])).toEqual([8, 9]);
    expect(mergeByRank([[], []])).toEqual([]);
  });
});
