import { describe, expect, it } from 'vitest';
import { CONVERSATION_GAP_MS, sameConversation, smoothByNeighbours, type Adjacent } from './smoothing';

describe('smoothByNeighbours', () => {
  it('gives a turn half the better score of the turns next to it, and lets a neighbour that was not a hit join', () => {
    const adjacent = new Map<string, Adjacent>([
      ['question', { previous: 'hello', next: 'answer' }],
      ['other', { previous: 'answer' }],
    ]);
    const smoothed = smoothByNeighbours(
      [
        { id: 'question', score: 1 },
        { id: 'other', score: 0.6 },
      ],
      adjacent,
    );
    expect(smoothed).toEqual([
      // 1 + 0.5 * 0: its neighbours were not hits.
      { id: 'question', score: 1 },
      { id: 'other', score: 0.6 },
      // New candidates, in order of appearance: the answer gains half of the better hit next to it (1 > 0.6).
      { id: 'hello', score: 0.5, lift: 0.5, neighbourOf: 'question' },
      { id: 'answer', score: 0.5, lift: 0.5, neighbourOf: 'question' },
    ]);
  });

  it('uses the original scores, not already smoothed ones, and the given factor', () => {
    const adjacent = new Map<string, Adjacent>([
      ['a', { next: 'b' }],
      ['b', { previous: 'a', next: 'c' }],
      ['c', { previous: 'b' }],
    ]);
    const smoothed = smoothByNeighbours(
      [
        { id: 'a', score: 1 },
        { id: 'b', score: 0.2 },
        { id: 'c', score: 0.1 },
      ],
      adjacent,
      0.25,
    );
    expect(smoothed.map((s) => s.id)).toEqual(['a', 'b', 'c']);
    [1.05, 0.45, 0.15].forEach((score, i) => expect(smoothed[i].score).toBeCloseTo(score));
  });

  it('says what each turn gained and from which neighbour: the better of the two lends', () => {
    const adjacent = new Map<string, Adjacent>([['b', { previous: 'a', next: 'c' }]]);
    const smoothed = smoothByNeighbours(
      [
        { id: 'a', score: 0.3 },
        { id: 'b', score: 0.2 },
        { id: 'c', score: 0.9 },
      ],
      adjacent,
    );
    const b = smoothed.find((s) => s.id === 'b')!;
    expect(b).toEqual({ id: 'b', score: expect.closeTo(0.65, 10), lift: 0.45, neighbourOf: 'c' });
    expect(b.score).toBe(0.2 + b.lift!);
    // c gains from b (its only neighbour), a from b too.
    expect(smoothed.find((s) => s.id === 'c')).toEqual({ id: 'c', score: 1, lift: 0.1, neighbourOf: 'b' });
  });

  it('changes nothing when no neighbour is given: a hidden turn (left out by the index) lends no score', () => {
    const hits = [
      { id: 'a', score: 1 },
      { id: 'b', score: 0.5 },
    ];
    expect(smoothByNeighbours(hits, new Map())).toEqual(hits);
    expect(smoothByNeighbours(hits, new Map([['a', {}]]))).toEqual(hits);
    // Adjacency of an id that is not a candidate is ignored (nothing to lend).
    expect(smoothByNeighbours(hits, new Map([['x', { next: 'y' }]]))).toEqual(hits);
  });
});

describe('sameConversation', () => {
  const at = (minutes: number) => new Date(Date.UTC(2024, 0, 1, 10, minutes)).toISOString();
  const turn = { kind: 'episodic' as const, subject: 'alice', validFrom: at(0) };

  it('never crosses sessions, subjects or kinds', () => {
    expect(sameConversation({ ...turn, session: 's1' }, { ...turn, session: 's1', validFrom: at(600) })).toBe(true);
    expect(sameConversation({ ...turn, session: 's1' }, { ...turn, session: 's2' })).toBe(false);
    expect(sameConversation({ ...turn, session: 's1' }, turn)).toBe(false);
    expect(sameConversation(turn, { ...turn, subject: 'bob' })).toBe(false);
    expect(sameConversation(turn, { ...turn, kind: 'semantic' })).toBe(false);
  });

  it('without sessions, joins turns at most 30 minutes apart', () => {
    expect(CONVERSATION_GAP_MS).toBe(30 * 60 * 1000);
    expect(sameConversation(turn, { ...turn, validFrom: at(30) })).toBe(true);
    expect(sameConversation(turn, { ...turn, validFrom: at(31) })).toBe(false);
  });
});
