import type { MemoryIndex, StoredUsage } from '@elma/domain';
import { contentBytes } from '@elma/domain';

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
 */
export class StoredUsageCounter {
  private readonly entries = new Map<string, Entry>();
  private readonly counting = new Map<string, Promise<Entry>>();

  constructor(
    private readonly deps: {
      index: Pick<MemoryIndex, 'records'>;
      /** Waits until the index has applied what the log holds (bounded), so a count includes the last writes. */
      settle: () => Promise<void>;
      nowMs: () => number;
      recountMs: number;
      minRecountGapMs: number;
    },
  ) {}

  /** The usage as last counted plus what was admitted since; counts the index first if the count is missing or old. */
  async fresh(tenant: string): Promise<StoredUsage> {
    const entry = this.entries.get(tenant);
    if (entry && this.deps.nowMs() - entry.countedAtMs < this.deps.recountMs) return entry.usage;
    return (await this.count(tenant)).usage;
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
    entry.usage = { memories: entry.usage.memories + added.memories, bytes: entry.usage.bytes + added.bytes };
    this.entries.set(tenant, entry);
    const countedAtMs = entry.countedAtMs;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = this.entries.get(tenant);
      // A count made since already saw the write's outcome.
      if (!now || now.countedAtMs !== countedAtMs) return;
      now.usage = { memories: Math.max(0, now.usage.memories - added.memories), bytes: Math.max(0, now.usage.bytes - added.bytes) };
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
    await this.deps.settle().catch(() => undefined);
    const countedAtMs = this.deps.nowMs();
    const usage: StoredUsage = { memories: 0, bytes: 0 };
    for await (const record of this.deps.index.records(tenant)) {
      usage.memories++;
      usage.bytes += contentBytes(record.content);
    }
    const entry = { usage, countedAtMs };
    this.entries.set(tenant, entry);
    return entry;
  }
}
