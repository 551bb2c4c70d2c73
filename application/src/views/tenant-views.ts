import { IndexPartitionCorrupt, streams, type Embedder, type EventLog, type MemoryIndex, type RecordedEvent } from '@elma/domain';
import type { EventSealer } from '../sealing/sealed-events';
import { MemoryViews } from './memory-views';

const PAGE = 1000;

/** An index that can build a tenant's views beside the live ones and switch to them at once (Elasticsearch's alias swap). */
export interface SwappableIndex extends MemoryIndex {
  reindex(tenant: string, fill: (target: MemoryIndex) => Promise<void>): Promise<{ from?: string; to: string; count: number }>;
}

function swappable(index: MemoryIndex): index is SwappableIndex {
  return typeof (index as Partial<SwappableIndex>).reindex === 'function';
}

export interface RebuildResult {
  dropped: number;
  events: number;
  memories: number;
  /** The index the views moved from and to, when they were built beside the live ones. */
  swap?: { from?: string; to: string };
}

/**
 * A tenant's views as a whole: rebuilt from the log by the ReindexWorkflow.
 * The rebuild reads the log only: the tenant's ingested events (the first
 * versions of the records extracted from them are the rule's function of
 * each event) and memory events, which hold every later decision (the
 * processor's and everyone else's), indexed by the same `MemoryViews` as the
 * live pass, so a rebuilt view answers queries exactly as the live one did.
 * Nothing is decided again.
 */
export class TenantViewsService {
  private readonly views: MemoryViews;

  constructor(
    private readonly deps: {
      log: EventLog;
      index: MemoryIndex;
      sealer: EventSealer;
      embedder: Embedder;
      /** Told the tenant once its records are replayed (they wait for their vectors, made with the current model). */
      embeddings?: { notify(tenants: string[]): void };
    },
  ) {
    this.views = new MemoryViews(deps);
  }

  /**
   * With an index that swaps (Elasticsearch), a new index is filled from the
   * log while queries keep using the old one, then the alias moves in one
   * step. (SQLite drops and replays in place: `drop`, then `replay`.)
   */
  strategy(): 'in_place' | 'alias_swap' {
    return swappable(this.deps.index) ? 'alias_swap' : 'in_place';
  }

  /** `afterFill` runs once the new index holds the log so far, just before the switch (progress, tests). */
  async rebuildBeside(tenant: string, options: { afterFill?: () => Promise<void> } = {}): Promise<RebuildResult> {
    const index = this.deps.index;
    if (!swappable(index)) throw new Error('this index rebuilds in place: drop, then replay');
    const dropped = await index.count(tenant);
    let filled = { events: 0, last: -1n };
    const swap = await index.reindex(tenant, async (target) => {
      const views = new MemoryViews({ index: target, sealer: this.deps.sealer });
      filled = await this.replayInto(views, tenant, -1n);
      await options.afterFill?.();
    });
    // The live projection kept writing to the old index until the swap: apply what came after the fill again.
    const caughtUp = await this.replayInto(this.views, tenant, filled.last);
    this.deps.embeddings?.notify([tenant]);
    return {
      dropped,
      events: filled.events + caughtUp.events,
      memories: await index.count(tenant),
      swap: { ...(swap.from ? { from: swap.from } : {}), to: swap.to },
    };
  }

  /**
   * Drops the tenant's views. A partition quarantined as corrupt is dropped
   * unread (its count is unknown: 0), which is what rebuilding it needs.
   */
  async drop(tenant: string): Promise<number> {
    const count = await this.deps.index.count(tenant).catch((error: unknown) => {
      if (error instanceof IndexPartitionCorrupt) return 0;
      throw error;
    });
    await this.deps.index.dropTenant(tenant);
    return count;
  }

  async replay(tenant: string): Promise<{ events: number; memories: number }> {
    const { events } = await this.replayInto(this.views, tenant, -1n);
    this.deps.embeddings?.notify([tenant]);
    return { events, memories: await this.deps.index.count(tenant) };
  }

  /** Applies the tenant's log after `after` (-1: all); returns how many events it read and the last position applied. */
  private async replayInto(views: MemoryViews, tenant: string, after: bigint): Promise<{ events: number; last: bigint }> {
    let events = 0;
    let last = after;
    let page: RecordedEvent[] = [];
    const flush = async () => {
      if (page.length === 0) return;
      await views.apply(tenant, page);
      events += page.length;
      last = page[page.length - 1].position;
      page = [];
      // A macrotask turn per page: the log and index pages resolve as microtasks, and a replay that never
      // lets timers run misses its activity heartbeats (and holds up the API in the same process).
      await new Promise<void>((resolve) => setImmediate(resolve));
    };
    for await (const event of this.deps.log.readAll({
      ...(after >= 0n ? { fromPosition: after } : {}),
      filter: { streamNamePrefix: [streams.eventsOfTenant(tenant), streams.memoriesOfTenant(tenant)] },
    })) {
      page.push(event);
      if (page.length >= PAGE) await flush();
    }
    await flush();
    return { events, last };
  }
}
