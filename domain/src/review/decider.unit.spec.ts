import { describe, expect, it } from 'vitest';
import { fold } from '../shared/decider';
import { given } from '../testing';
import { ReviewFlagAlreadyResolved, ReviewFlagNotFound, reviewDecider, type ReviewEvent } from './decider';
import { pageOfFlags, ReviewFlagQuery, type ReviewFlagRaised } from './flag';

const AT = '2026-03-01T00:00:00.000Z';
const flag = (id: string, kind: ReviewFlagRaised['kind'] = 'trust_conflict'): ReviewFlagRaised => ({
  id,
  kind,
  rule: kind === 'write_burst' ? 'fact_burst' : 'lower_trust_contradiction',
  eventIds: [`evt-${id}`],
  recordIds: [`mem-${id}`],
  count: 1,
  raisedAt: AT,
});
const raised = (id: string, kind?: ReviewFlagRaised['kind']): ReviewEvent => ({ type: 'ReviewFlagRaised', data: flag(id, kind) });

describe('the review stream', () => {
  it('raises a flag once: raising it again (a replayed batch) records nothing', () => {
    expect(given(reviewDecider).when({ type: 'RaiseFlags', flags: [flag('a'), flag('a')] })).toEqual([raised('a')]);
    expect(given(reviewDecider, raised('a')).when({ type: 'RaiseFlags', flags: [flag('a'), flag('b')] })).toEqual([raised('b')]);
  });

  it('resolves an open flag once, by whom and when, and never touches anything else', () => {
    const resolve = { type: 'ResolveFlag' as const, id: 'a', decision: 'confirmed' as const, by: 'reviewer-1', at: AT };
    const events = given(reviewDecider, raised('a')).when(resolve);
    expect(events).toEqual([{ type: 'ReviewFlagResolved', data: { id: 'a', decision: 'confirmed', by: 'reviewer-1', at: AT } }]);
    const state = fold(reviewDecider, [raised('a'), ...events]);
    expect(state.flags.get('a')).toMatchObject({ status: 'confirmed', resolution: { by: 'reviewer-1' } });
    expect(() => given(reviewDecider, raised('a'), ...events).when(resolve)).toThrow(ReviewFlagAlreadyResolved);
  });

  it('answers an unknown id as not found', () => {
    expect(() =>
      given(reviewDecider, raised('a')).when({ type: 'ResolveFlag', id: 'rf_forged', decision: 'dismissed', by: 'r', at: AT }),
    ).toThrow(ReviewFlagNotFound);
  });

  it('records a source tier only when it changes', () => {
    const observe = (tier: 'certified' | 'external') => ({
      type: 'ObserveSourceTrust' as const,
      observations: [{ system: 'kb', tier, at: AT }],
    });
    const first = given(reviewDecider).when(observe('certified'));
    expect(first).toHaveLength(1);
    expect(given(reviewDecider, ...first).when(observe('certified'))).toEqual([]);
    expect(given(reviewDecider, ...first).when(observe('external'))).toHaveLength(1);
  });
});

describe('a page of flags', () => {
  const state = fold(reviewDecider, [raised('a'), raised('b', 'write_burst'), raised('c'), raised('d', 'write_burst'), raised('e')]);
  const flags = [...state.flags.values()];
  const page = (query: Record<string, unknown>) => pageOfFlags(flags, ReviewFlagQuery.parse(query));

  it('walks every flag once with its cursor, oldest first', () => {
    const first = page({ limit: '2' });
    expect(first.items.map((f) => f.id)).toEqual(['a', 'b']);
    const second = page({ limit: '2', cursor: first.nextCursor });
    expect(second.items.map((f) => f.id)).toEqual(['c', 'd']);
    const last = page({ limit: '2', cursor: second.nextCursor });
    expect(last.items.map((f) => f.id)).toEqual(['e']);
    expect(last.nextCursor).toBeUndefined();
  });

  it('filters by kind and status across pages', () => {
    const bursts = page({ kind: 'write_burst', limit: '1' });
    expect(bursts.items.map((f) => f.id)).toEqual(['b']);
    expect(page({ kind: 'write_burst', limit: '1', cursor: bursts.nextCursor }).items.map((f) => f.id)).toEqual(['d']);
    expect(page({ status: 'dismissed' }).items).toEqual([]);
  });

  it('refuses a cursor that is not one', () => {
    expect(ReviewFlagQuery.safeParse({ cursor: 'rf_1; drop' }).success).toBe(false);
    expect(ReviewFlagQuery.safeParse({ kind: 'everything' }).success).toBe(false);
  });
});
