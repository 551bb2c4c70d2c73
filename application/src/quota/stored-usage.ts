import type { MemoryIndex, StoredUsage } from '@elma/domain';

interface Entry {
  usage: StoredUsage;
  /** When the index was last counted (ms of `nowMs`); reservations since then are added to `usage`. */
  countedAtMs: number;
}

/**
 * What each tenant stores, kept as cheap counters: counted from the index
 * once (on first use in this process, so a restart starts from the truth),
 * raised by every write admitted since, and counted again from the index
 * every `recountMs` and before a write is refused (at most every
 * `minRecountGapMs`), so erasures, off-boarding and consolidation show up
 * without any of them having to report here, and no refusal rests on a stale count.
 * The periodic recount runs beside the writes: they go on against the
 * counters meanwhile (a count of a large tenant takes seconds, which every
 * write of the tenant would otherwise wait out).
 */
export class StoredUsageCounter {
  private readonly entries = new Map<string, Entry>();
  private readonly counting = new Map<string, Promise<Entry>>();
  /** Writes admitted while a count of the tenant runs, which it may not have seen: added to its result. */
  private readonly admittedWhileCounting = new Map<string, StoredUsage>();
  private stopped = false;

  constructor(
    private readonly deps: {
      index: Pick<MemoryIndex, 'storedUsage'>;
      /** Waits until the index has applied what the log holds (bounded), so a count includes the last writes. */
      settle: () => Promise<void>;
      nowMs: () => number;
      recountMs: number;
      minRecountGapMs: number;
    },
  ) {}

  /**
   * The usage as last counted plus what was admitted since. The first time,
   * the index is counted first; when the count is older than `recountMs`, a
   * new one starts and the usage known now is answered at once.
   */
  async fresh(tenant: string): Promise<StoredUsage> {
    const entry = this.entries.get(tenant);
    if (!entry || entry.countedAtMs === Number.NEGATIVE_INFINITY) return (await this.count(tenant)).usage;
    // A failed count leaves the counters as they were; the next write past recountMs tries again.
    if (this.deps.nowMs() - entry.countedAtMs >= this.deps.recountMs) this.count(tenant).catch(() => undefined);
    return entry.usage;
  }

  /**
   * Counts each of these tenants not counted yet, one after the other: run in
   * the background of a start, so that a tenant's first write after a restart
   * finds its count made (or under way) rather than waiting for all of it.
   * A count that fails is left to the tenant's first write; `stop` ends it.
   */
  async countAhead(tenants: readonly string[]): Promise<void> {
    for (const tenant of tenants) {
      if (this.stopped) return;
      if ((this.entries.get(tenant)?.countedAtMs ?? Number.NEGATIVE_INFINITY) > Number.NEGATIVE_INFINITY) continue;
      await this.count(tenant).catch(() => undefined);
    }
  }

  /** Ends `countAhead` after the count under way (the index is about to close). */
  stop(): void {
    this.stopped = true;
  }

  /** Counts again unless the last count is younger than the minimum gap; answers the usage either way. */
  async recount(tenant: string): Promise<StoredUsage> {
    const entry = this.entries.get(tenant);
    if (entry && this.deps.nowMs() - entry.countedAtMs < this.deps.minRecountGapMs) return entry.usage;
    return (await this.count(tenant)).usage;
  }

  /** The usage known now, without counting (a tenant never counted: nothing). */
  peek(tenant: string): StoredUsage {
    return this.entries.get(tenant)?.usage ?? { memories: 0, bytes: 0 };
  }

  /** Every tenant counted by this process, for the metrics. */
  known(): [tenant: string, usage: StoredUsage][] {
    return [...this.entries].map(([tenant, entry]) => [tenant, { ...entry.usage }]);
  }

  /**
   * Adds an admitted write to the tenant's usage; the returned function takes
   * it back (the write failed after all). Synchronous, so a check and the
   * reservation that follows it cannot be split by another request.
   */
  reserve(tenant: string, added: StoredUsage): () => void {
    const entry = this.entries.get(tenant) ?? { usage: { memories: 0, bytes: 0 }, countedAtMs: Number.NEGATIVE_INFINITY };
    entry.usage = plus(entry.usage, added);
    this.entries.set(tenant, entry);
    const countedAtMs = entry.countedAtMs;
    const counting = this.admittedWhileCounting.get(tenant);
    if (counting) Object.assign(counting, plus(counting, added));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (counting && this.admittedWhileCounting.get(tenant) === counting) Object.assign(counting, minus(counting, added));
      const now = this.entries.get(tenant);
      // A count made since already saw the write's outcome.
      if (!now || now.countedAtMs !== countedAtMs) return;
      now.usage = minus(now.usage, added);
    };
  }

  /** One count per tenant at a time: concurrent callers share it. */
  private count(tenant: string): Promise<Entry> {
    let running = this.counting.get(tenant);
    if (!running) {
      running = this.countIndex(tenant).finally(() => this.counting.delete(tenant));
      this.counting.set(tenant, running);
    }
    return running;
  }

  private async countIndex(tenant: string): Promise<Entry> {
    // From before the settling: a write admitted then may or may not be in the count, and counting it twice
    // (until the next count) errs on the side of the quota, where missing it would let a tenant past it.
    const admitted: StoredUsage = { memories: 0, bytes: 0 };
    this.admittedWhileCounting.set(tenant, admitted);
    try {
      await this.deps.settle().catch(() => undefined);
      const countedAtMs = this.deps.nowMs();
      const entry = { usage: plus(await this.deps.index.storedUsage(tenant), admitted), countedAtMs };
      this.entries.set(tenant, entry);
      return entry;
    } finally {
      this.admittedWhileCounting.delete(tenant);
    }
  }
}

function plus(a: StoredUsage, b: StoredUsage): StoredUsage {
  return { memories: a.memories + b.memories, bytes: a.bytes + b.bytes };
}

function minus(a: StoredUsage, b: StoredUsage): StoredUsage {
  return { memories: Math.max(0, a.memories - b.memories), bytes: Math.max(0, a.bytes - b.bytes) };
}
