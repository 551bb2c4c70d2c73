import { describe, expect, it } from 'vitest';
import {
  conversationKeys,
  feedbackVector,
  liftByConversation,
  liftPool,
  mergeExpansion,
  spreadOverConversations,
  turnConversations,
  type Ranked,
} from './evidence';

const at = (minutes: number) => new Date(Date.UTC(2024, 0, 1, 10, minutes)).toISOString();
const hit = (id: string, score: number, session?: string, overrides: Partial<Ranked['record']> = {}): Ranked => ({
  record: { id, kind: 'episodic', subject: 'alice', validFrom: at(0), ...(session ? { session } : {}), ...overrides },
  score,
});

describe('conversationKeys', () => {
  it('groups by subject and session, chains sessionless turns at most 30 minutes apart, and leaves other kinds alone', () => {
    const keys = conversationKeys(
      [
        hit('a', 1, 's1'),
        hit('b', 1, 's1', { subject: 'bob' }),
        hit('c', 1, 's1'),
        hit('d', 1, undefined, { validFrom: at(0) }),
        hit('e', 1, undefined, { validFrom: at(25) }),
        hit('f', 1, undefined, { validFrom: at(50) }),
        hit('g', 1, undefined, { validFrom: at(90) }),
        hit('h', 1, undefined, { kind: 'semantic' }),
      ].map((h) => h.record),
    );
    expect(keys.get('a')).toBe(keys.get('c'));
    expect(keys.get('a')).not.toBe(keys.get('b'));
    // d-e-f chain (each within 30 minutes of the one before), g is 40 minutes after f.
    expect(new Set(['d', 'e', 'f'].map((id) => keys.get(id))).size).toBe(1);
    expect(keys.get('g')).not.toBe(keys.get('f'));
    expect(keys.get('h')).toBeUndefined();
  });
});

describe('liftByConversation', () => {
  it('lifts a memory whose conversation holds several good hits above an equal one alone, and says why', () => {
    const lifted = liftByConversation([hit('alone', 1, 's1'), hit('answer', 0.95, 's2'), hit('context', 0.9, 's2')], {
      weight: 0.3,
      depth: 3,
    });
    expect(lifted.map((h) => h.record.id)).toEqual(['answer', 'context', 'alone']);
    // s2 holds 1.85, the most: its memories gain 0.3 × best (1); s1's 1.0 / 1.85 of that.
    expect(lifted[0].score).toBeCloseTo(1.25);
    expect(lifted[2].score).toBeCloseTo(1 + 0.3 / 1.85);
    expect(lifted[0].via).toEqual({ route: 'conversation', lift: expect.closeTo(0.3) });
  });

  it('counts only the `depth` best of a conversation, lifts no memory outside a conversation, and keeps how a hit was found', () => {
    const many = ['a', 'b', 'c', 'd'].map((id) => hit(id, 0.5, 's1'));
    const fact = hit('fact', 1, undefined, { kind: 'semantic' });
    const found = { ...hit('found', 0.1, 's2'), via: { route: 'expansion' as const, fromId: 'a', similarity: 0.9 } };
    const lifted = liftByConversation([fact, ...many, found], { weight: 1, depth: 2 });
    expect(lifted.find((h) => h.record.id === 'fact')!.score).toBe(1);
    // s1: 0.5 + 0.5 (two best) = 1, the most; s2: 0.1.
    expect(lifted.find((h) => h.record.id === 'a')!.score).toBeCloseTo(1.5);
    expect(lifted.find((h) => h.record.id === 'found')!.score).toBeCloseTo(0.2);
    expect(lifted.find((h) => h.record.id === 'found')!.via?.route).toBe('expansion');
  });

  it('changes nothing with weight 0 or without hits', () => {
    const hits = [hit('a', 1, 's1'), hit('b', 0.5, 's2')];
    expect(liftByConversation(hits, { weight: 0, depth: 3 })).toEqual(hits);
    expect(liftByConversation([], { weight: 0.3, depth: 3 })).toEqual([]);
  });
});

describe('liftPool', () => {
  const minute = 60_000;
  const places = [
    { id: 'alone', subject: 'alice', session: 's1', at: 0 },
    { id: 'answer', subject: 'alice', session: 's2', at: 0 },
    { id: 'context', subject: 'alice', session: 's2', at: minute },
    { id: 'far', subject: 'alice', session: 's2', at: 2 * minute },
  ];
  const conversationOf = (ids: string[]) => {
    const keys = turnConversations(places);
    return new Map(ids.map((id) => [id, keys.get(id)]));
  };

  it('lifts the best `pool` of a ranked list as liftByConversation lifts records, drops what lies past it, and says by how much', () => {
    const ranked = [
      { id: 'alone', score: 1 },
      { id: 'answer', score: 0.95 },
      { id: 'context', score: 0.9 },
      { id: 'far', score: 0.1 },
    ];
    const lifted = liftPool(ranked, conversationOf, { weight: 0.3, depth: 3, pool: 3 });
    const byRecords = liftByConversation(
      ranked.slice(0, 3).map((r) => hit(r.id, r.score, places.find((p) => p.id === r.id)!.session)),
      { weight: 0.3, depth: 3 },
    );
    expect(lifted.map((r) => [r.id, r.score])).toEqual(byRecords.map((h) => [h.record.id, h.score]));
    expect(lifted.map((r) => r.id)).toEqual(['answer', 'context', 'alone']);
    expect(lifted[0].conversationLift).toBeCloseTo(0.3);
    // 'far' was past the pool: it neither counts as evidence of s2 nor comes back.
    expect(lifted.map((r) => r.id)).not.toContain('far');
  });

  it('keys sessionless turns as conversationKeys does, and lifts nothing without a conversation', () => {
    const keys = turnConversations([
      { id: 'd', subject: 'alice', at: 0 },
      { id: 'e', subject: 'alice', at: 25 * minute },
      { id: 'g', subject: 'alice', at: 90 * minute },
    ]);
    expect(keys.get('d')).toBe(keys.get('e'));
    expect(keys.get('g')).not.toBe(keys.get('e'));
    const ranked = [{ id: 'fact', score: 1 }];
    expect(liftPool(ranked, () => new Map(), { weight: 0.3, depth: 3, pool: 3 })).toEqual(ranked);
  });
});

describe('spreadOverConversations', () => {
  it('discounts each further memory of a conversation already ranked', () => {
    const spread = spreadOverConversations([hit('a1', 1, 's1'), hit('a2', 0.9, 's1'), hit('b1', 0.8, 's2')], { decay: 0.5 });
    expect(spread.map((h) => [h.record.id, h.score])).toEqual([
      ['a1', 1],
      ['b1', 0.8],
      ['a2', 0.45],
    ]);
  });
});

describe('mergeExpansion', () => {
  it('adds what a seed found in another conversation, with where it came from, and ignores its own conversation', () => {
    const seed = hit('seed', 1, 's1');
    const merged = mergeExpansion(
      [seed, hit('other', 0.4, 's3')],
      [
        { hit: hit('far', 0, 's2'), fromId: 'seed', seedScore: 1, similarity: 0.8 },
        { hit: hit('sibling', 0, 's1'), fromId: 'seed', seedScore: 1, similarity: 0.99 },
        { hit: hit('seed', 0, 's1'), fromId: 'seed', seedScore: 1, similarity: 1 },
        { hit: hit('other', 0, 's3'), fromId: 'seed', seedScore: 1, similarity: 0.5 },
      ],
      0.5,
    );
    expect(merged.map((h) => [h.record.id, h.score])).toEqual([
      ['seed', 1],
      ['other', 0.65],
      ['far', 0.4],
    ]);
    expect(merged[2].via).toEqual({ route: 'expansion', fromId: 'seed', similarity: 0.8 });
    expect(merged[1].via).toBeUndefined();
  });
});

describe('feedbackVector', () => {
  it('moves the query towards the seeds and keeps unit length', () => {
    const moved = feedbackVector(new Float32Array([1, 0]), [new Float32Array([0, 2])], 1);
    expect(moved[0]).toBeCloseTo(Math.SQRT1_2);
    expect(moved[1]).toBeCloseTo(Math.SQRT1_2);
    expect([...feedbackVector(new Float32Array([3, 4]), [new Float32Array([0, 1])], 0)]).toEqual([
      expect.closeTo(0.6),
      expect.closeTo(0.8),
    ]);
  });
});
