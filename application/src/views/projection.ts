import {
  groupBy,
  streams,
  type ConflictSettlement,
  type Embedder,
  type EventLog,
  type MemoryIndex,
  type RecordedEvent,
} from '@elma/domain';
import { EventSealer, tenantOf } from '../sealing/sealed-events';
import { MEMORY_ID } from '../memory/memory-events';
import { MemoryProcessor, appendedByProcessor, type ConsolidationTrigger } from './memory-processor';
import { MemoryViews } from './memory-views';
import type { ReviewDetector } from '../review/review-detector';

export { SESSION_END, type ConsolidationTrigger } from './memory-processor';

/** The streams the live pass reads: ingested events to decide on, memory events to index. */
export const VIEW_SOURCE_PREFIXES = [streams.categories.events, streams.categories.memory];

/**
 * The live pass over the log: the processor decides on the
 * ingested events and appends `memory-*` events, and the views index those
 * records and the memory events written by others, in the same pass, so
 * that a position the runner has passed is searchable (read your writes) and
 * the next decision settles conflicts against an index that holds every
 * earlier one (why one pass: docs/adr/0005-projection-processor-and-views.md).
 * Everything is idempotent by deterministic ids, so replaying any part of
 * the log changes nothing.
 */
export class Projection {
  readonly processor: MemoryProcessor;
  readonly views: MemoryViews;
  private reviews?: Pick<ReviewDetector, 'inspect'>;

  constructor(deps: { log: EventLog; index: MemoryIndex; sealer: EventSealer; embedder: Embedder; conflicts?: ConflictSettlement }) {
    this.processor = new MemoryProcessor(deps);
    this.views = new MemoryViews(deps);
  }

  /**
   * Asks for consolidation of a subject after `everyEvents` new events, and
   * at once on a `session.end` event (triggers: docs/architecture.md#consolidation). The trigger must not block.
   */
  setConsolidationTrigger(trigger: ConsolidationTrigger, everyEvents: number): void {
    this.processor.setConsolidationTrigger(trigger, everyEvents);
  }

  /**
   * Runs the review detectors over each pass's decisions, once they are
   * recorded and indexed (docs/adr/0013-review-flags.md). Advisory: they
   * append flags, never memory events.
   */
  setReviewDetector(reviews: Pick<ReviewDetector, 'inspect'>): void {
    this.reviews = reviews;
  }

  /**
   * What this process keeps in memory about erased records: nothing (the
   * pass holds no record between batches), so none is evicted.
   */
  forget(_tenant: string, _ids: string[]): number {
    return 0;
  }

  async apply(events: RecordedEvent[]): Promise<{ events: number; memories: number }> {
    let memories = 0;
    for (const [tenant, ofTenant] of groupBy(events, tenantOf)) {
      memories += await this.applyTenant(tenant, ofTenant);
    }
    return { events: events.length, memories };
  }

  private async applyTenant(tenant: string, events: RecordedEvent[]): Promise<number> {
    // Decided (and appended) before the index is touched: a tenant whose index partition turns out
    // corrupt is passed over, and its rebuild finds these decisions in the log.
    const { records, ingested, triggers } = await this.processor.derive(
      tenant,
      events.filter((e) => e.type === 'EventIngested'),
    );
    // The processor's own memory events were indexed by the pass that appended them; the others are indexed here.
    const written = events.filter(
      (e) => e.type === 'MemoryRecorded' && !appendedByProcessor(e) && !records.has(String(e.metadata[MEMORY_ID])),
    );
    for (const [id, record] of await this.views.open(tenant, written)) if (!records.has(id)) records.set(id, record);

    const all = [...records.values()];
    if (all.length === 0) {
      for (const trigger of triggers) trigger();
      return 0;
    }
    const revisions = await this.processor.settle(tenant, all);
    await this.views.index(tenant, [...all, ...revisions]);
    await this.reviews?.inspect(tenant, { ingested, records: all, revisions });
    // Only now: a consolidation started earlier could look for records the index does not show yet.
    for (const trigger of triggers) trigger();
    return all.length + revisions.length;
  }
}

export { memoryEventMetadata } from '../memory/memory-events';
