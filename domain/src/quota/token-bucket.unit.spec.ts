import { describe, expect, it } from 'vitest';
import { fullBucket, retryAfterSeconds, take, TokenBuckets, type BucketLimit } from './token-bucket';

const limit: BucketLimit = { ratePerSecond: 10, burst: 20 };

describe('token bucket', () => {
  it('an idle tenant may spend its whole burst at once, and not one token more', () => {
    // given a bucket seen for the first time
    let state = fullBucket(limit, 0);
    // when twenty requests arrive in the same millisecond
    for (let i = 0; i < 20; i++) {
      const decision = take(state, limit, 1, 0);
      expect(decision.allowed).toBe(true);
      state = decision.state;
    }
    // then the twenty-first is refused, with the time one token takes to flow in
    const refused = take(state, limit, 1, 0);
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 100 });
  });

  it('refills at the rate, never above the burst', () => {
    const empty = { tokens: 0, atMs: 0 };
    expect(take(empty, limit, 5, 499).allowed).toBe(false);
    expect(take(empty, limit, 5, 500).allowed).toBe(true);
    // an hour idle still leaves only the burst
    expect(take(empty, limit, 21, 3_600_000)).toMatchObject({ allowed: false, retryAfterMs: undefined });
    expect(take(empty, limit, 20, 3_600_000).allowed).toBe(true);
  });

  it('a refused batch takes nothing, so a smaller request after it still fits', () => {
    const state = { tokens: 7, atMs: 1_000 };
    const refused = take(state, limit, 10, 1_000);
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 300 });
    expect(refused.state.tokens).toBe(7);
    expect(take(refused.state, limit, 7, 1_000).allowed).toBe(true);
  });

  it('a batch larger than the burst can never pass: no retry time is promised', () => {
    expect(take(fullBucket(limit, 0), limit, 21, 0)).toMatchObject({ allowed: false, retryAfterMs: undefined });
  });

  it('a clock that goes back refills nothing and takes nothing twice', () => {
    const spent = take({ tokens: 1, atMs: 10_000 }, limit, 1, 10_000);
    expect(spent.allowed).toBe(true);
    const earlier = take(spent.state, limit, 1, 5_000);
    expect(earlier.allowed).toBe(false);
    expect(earlier.state.atMs).toBe(10_000);
  });

  it('Retry-After is whole seconds, at least one', () => {
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
    expect(retryAfterSeconds(0)).toBe(1);
  });

  it('each key has a bucket of its own: one tenant spending its burst leaves the other untouched', () => {
    const buckets = new TokenBuckets();
    for (let i = 0; i < 20; i++) expect(buckets.take('a:recall', limit, 1, 0).allowed).toBe(true);
    expect(buckets.take('a:recall', limit, 1, 0).allowed).toBe(false);
    expect(buckets.take('b:recall', limit, 1, 0).allowed).toBe(true);
    expect(buckets.available('b:recall', limit, 0)).toBe(19);
    expect(buckets.available('c:recall', limit, 0)).toBe(20);
  });
});
