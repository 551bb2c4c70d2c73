/**
 * A token bucket: `ratePerSecond` tokens flow in continuously up to `burst`;
 * a request takes as many tokens as it weighs (one recall, or one per event
 * of a batch). Pure: the caller passes the time in, so the same inputs give
 * the same decision and tests need no clock.
 */
export interface BucketLimit {
  ratePerSecond: number;
  burst: number;
}

export interface BucketState {
  tokens: number;
  /** Milliseconds (any epoch, as long as one bucket always uses the same clock). */
  atMs: number;
}

export type BucketDecision =
  | { allowed: true; state: BucketState }
  /** `retryAfterMs`: when the bucket will hold `cost` tokens; undefined when it never can (`cost` > `burst`). */
  | { allowed: false; state: BucketState; retryAfterMs: number | undefined };

/** A bucket seen for the first time is full: a tenant that was idle may spend its whole burst. */
export function fullBucket(limit: BucketLimit, nowMs: number): BucketState {
  return { tokens: limit.burst, atMs: nowMs };
}

/** The bucket at `nowMs`: refilled for the time elapsed, never above the burst (a clock going back refills nothing). */
export function refill(state: BucketState, limit: BucketLimit, nowMs: number): BucketState {
  const elapsedMs = Math.max(0, nowMs - state.atMs);
  return { tokens: Math.min(limit.burst, state.tokens + (elapsedMs * limit.ratePerSecond) / 1000), atMs: Math.max(state.atMs, nowMs) };
}

/**
 * Takes `cost` tokens, all or none: a request that does not fit takes
 * nothing, so a refused batch does not eat the tokens of the next, smaller one.
 */
export function take(state: BucketState, limit: BucketLimit, cost: number, nowMs: number): BucketDecision {
  const current = refill(state, limit, nowMs);
  if (cost <= current.tokens) return { allowed: true, state: { tokens: current.tokens - cost, atMs: current.atMs } };
  if (cost > limit.burst) return { allowed: false, state: current, retryAfterMs: undefined };
  return { allowed: false, state: current, retryAfterMs: Math.ceil(((cost - current.tokens) * 1000) / limit.ratePerSecond) };
}

/** `Retry-After` in whole seconds (at least 1: `Retry-After: 0` invites an immediate retry that would fail again). */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/**
 * The buckets of many keys (a tenant and a quota), each created full on first
 * use. Holds no clock: every call passes the time.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, BucketState>();

  take(key: string, limit: BucketLimit, cost: number, nowMs: number): BucketDecision {
    const decision = take(this.buckets.get(key) ?? fullBucket(limit, nowMs), limit, cost, nowMs);
    this.buckets.set(key, decision.state);
    return decision;
  }

  /** Tokens left in a key's bucket at `nowMs` (the burst for a key never used). */
  available(key: string, limit: BucketLimit, nowMs: number): number {
    const state = this.buckets.get(key);
    return state ? refill(state, limit, nowMs).tokens : limit.burst;
  }
}
