import type { Principal } from '@elma/domain';

/**
 * Remembers, per caller, the log position of their last write in this
 * process, so `consistency: "strong"` can wait for exactly that much of the
 * projection. Callers in another process pass `afterPosition` instead.
 */
export class WriteTracker {
  private readonly last = new Map<string, bigint>();
  private static readonly MAX_CALLERS = 100_000;

  record(principal: Principal, position: bigint): void {
    const key = `${principal.tenant}\u0000${principal.sub}`;
    this.last.delete(key);
    // Bounded: the oldest caller is forgotten first (Map keeps insertion order).
    if (this.last.size >= WriteTracker.MAX_CALLERS) this.last.delete(this.last.keys().next().value!);
    this.last.set(key, position);
  }

  lastWrite(principal: Principal): bigint | undefined {
    return this.last.get(`${principal.tenant}\u0000${principal.sub}`);
  }
}
