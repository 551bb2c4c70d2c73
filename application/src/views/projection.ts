import {
  groupBy,
  EventIngested,
  KeyShredded,
  MemoryRecorded,
  decide,
  deriveMemories,
  episodicIdFor,
  factKey,
  settleConflicts,
  initialMemoryState,
  streams,
  type Embedder,
  type EventLog,
  type MemoryIndex,
  type MemoryRecord,
  type RecordedEvent,
} from '@elma/domain';
import { EventSealer, tenantOf } from '../sealing/sealed-events';
import { MEMORY_ID, VERSION, memoryVersionAppends } from '../memory/memory-events';

/** Asks for a subject's consolidation; the subject is named by one of its records (never a person's id). */
export type ConsolidationTrigger = (tenant: string, subjectRef: string, reason: 'events' | 'session_end') => void;

/** The activity of an ingested event that ends a session and triggers its consolidation. */
export const SESSION_END = 'session.end';

/** The streams the views are built from. */
export const VIEW_SOURCE_PREFIXES = [streams.categories.events, streams.categories.memory];


export interface ApplyOptions {
  /**
   * Append the derived memory events to their `memory-*` streams. The live
   * projection does; a rebuild does not (the log already holds them, and a
   * rebuild must only read the log).
   */
  appendDerived: boolean;
}

/**
 * Turns log events into index views (paper, section 5.1 'Write path', stage two). Ingested events become
 * episodic memories, and semantic ones when they carry a fact; explicit
 * memory events are indexed as they are. Everything is idempotent by
 * deterministic ids, so replaying any part of the log changes nothing.
 */
export class Projection {
  /**
   * Memory ids (with version) this projection derived and indexed recently.
   * Their `MemoryRecorded` events come back through the subscription right
   * after; this lets them be skipped without an index read. Bounded.
   */
  private readonly recentlyIndexed = new Map<string, number>();
  private static readonly RECENT_MAX = 20_000;

  /** New events per subject since its last consolidation trigger (in memory: a restart only delays one). */
  private readonly sinceConsolidation = new Map<string, number>();
  private consolidation?: { trigger: ConsolidationTrigger; everyEvents: number };

  constructor(
    private readonly deps: { log: EventLog; index: MemoryIndex; sealer: EventSealer; embedder: Embedder },
  ) {}

  /**
   * Asks for consolidation of a subject after `everyEvents` new events, and
   * at once on a `session.end` event (triggers: docs/architecture.md#consolidation). The trigger must
   * not block: it starts a workflow and returns.
   */
  setConsolidationTrigger(trigger: ConsolidationTrigger, everyEvents: number): void {
    this.consolidation = { trigger, everyEvents };
  }

  /** Forgets what it indexed for a tenant whose views are dropped or purged. */
  forgetTenant(tenant: string): void {
    for (const key of this.recentlyIndexed.keys()) if (key.startsWith(`${tenant}/`)) this.recentlyIndexed.delete(key);
  }

  /** Forgets these records (erased); returns how many it held. */
  forget(tenant: string, ids: string[]): number {
    let forgotten = 0;
    for (const id of ids) if (this.recentlyIndexed.delete(`${tenant}/${id}`)) forgotten++;
    return forgotten;
  }

  async apply(events: RecordedEvent[], options: ApplyOptions): Promise<{ events: number; memories: number }> {
    let memories = 0;
    for (const [tenant, ofTenant] of groupBy(events, tenantOf)) {
      memories += await this.applyTenant(tenant, ofTenant, options);
    }
    return { events: events.length, memories };
  }

  private async applyTenant(tenant: string, events: RecordedEvent[], options: ApplyOptions): Promise<number> {
    const derived = new Map<string, MemoryRecord>();
    const triggers: (() => void)[] = [];
    const ingested = await this.openSkippingErased<EventIngested>(
      tenant,
      events.filter((e) => e.type === 'EventIngested'),
    );
    for (const event of ingested) {
      const parsed = EventIngested.parse(event);
      for (const command of deriveMemories(parsed)) {
        for (const recorded of decide(command, initialMemoryState())) derived.set(recorded.record.id, recorded.record);
      }
      if (options.appendDerived) this.countForConsolidation(tenant, parsed, triggers);
    }
    // A record erased on its own (its event kept, e.g. under a legal hold) must not be derived again.
    if (derived.size > 0) for (const id of await this.deps.sealer.erasedAmong(tenant, [...derived.keys()])) derived.delete(id);
    if (options.appendDerived && derived.size > 0) await this.appendMemoryEvents(tenant, [...derived.values()]);

    // Memory events: skip those derived just now or already indexed at this version.
    const pending: RecordedEvent[] = [];
    for (const event of events) {
      if (event.type !== 'MemoryRecorded') continue;
      const memoryId = String(event.metadata[MEMORY_ID]);
      if (derived.has(memoryId)) continue;
      // A rebuild never trusts the cache: the index it would vouch for has just been dropped.
      if (options.appendDerived && (this.recentlyIndexed.get(`${tenant}/${memoryId}`) ?? 0) >= Number(event.metadata[VERSION])) continue;
      const current = await this.deps.index.get(tenant, memoryId);
      if (current && current.record.version >= Number(event.metadata[VERSION])) continue;
      pending.push(event);
    }
    for (const event of await this.openSkippingErased<MemoryRecorded>(tenant, pending)) {
      const { record } = MemoryRecorded.parse(event);
      derived.set(record.id, record);
    }

    const records = [...derived.values()];
    if (records.length === 0) {
      for (const trigger of triggers) trigger();
      return 0;
    }
    // Contradiction check (paper, section 5.2 'Consolidation', rule 4) on the live path only: a rebuild replays the decisions from the log.
    if (options.appendDerived) {
      const revisions = await this.settleConflicts(tenant, records);
      if (revisions.length > 0) {
        await this.appendMemoryEvents(tenant, revisions);
        records.push(...revisions);
      }
    }
    const vectors = await this.deps.embedder.embed(records.map((r) => r.content.text));
    await this.deps.index.upsert(
      tenant,
      records.map((record, i) => ({ record, vector: vectors[i] })),
    );
    if (this.recentlyIndexed.size + records.length > Projection.RECENT_MAX) this.recentlyIndexed.clear();
    for (const record of records) this.recentlyIndexed.set(`${tenant}/${record.id}`, record.version);
    // Only now: a consolidation started earlier could look for records the index does not show yet.
    for (const trigger of triggers) trigger();
    return records.length;
  }

  private countForConsolidation(tenant: string, event: EventIngested, triggers: (() => void)[]): void {
    if (!this.consolidation) return;
    const key = `${tenant}/${event.subject}`;
    const count = (this.sinceConsolidation.get(key) ?? 0) + 1;
    const sessionEnd = event.activity === SESSION_END;
    if (count < this.consolidation.everyEvents && !sessionEnd) {
      this.sinceConsolidation.set(key, count);
      return;
    }
    this.sinceConsolidation.delete(key);
    const consolidation = this.consolidation;
    triggers.push(() => consolidation.trigger(tenant, episodicIdFor(event.eventId), sessionEnd ? 'session_end' : 'events'));
  }

  /**
   * New facts against the current records about the same entity and
   * attribute (and against each other, in order): the revisions the
   * resolution rules call for, each a new version recorded at the new fact's
   * transaction time. Replaying the same facts yields the same revisions.
   */
  private async settleConflicts(tenant: string, records: MemoryRecord[]): Promise<MemoryRecord[]> {
    const settled = new Map<string, Map<string, MemoryRecord>>();
    const revisions = new Map<string, MemoryRecord>();
    const keep = (byId: Map<string, MemoryRecord>, record: MemoryRecord) => {
      const known = byId.get(record.id);
      if (!known || known.version <= record.version) byId.set(record.id, record);
    };
    for (const record of records) {
      if (record.kind !== 'semantic' || !record.content.fact || record.version !== 1) continue;
      const key = factKey(record.content.fact);
      let byId = settled.get(key);
      if (!byId) {
        byId = new Map();
        for (const stored of await this.deps.index.currentFacts(tenant, key)) keep(byId, stored);
        settled.set(key, byId);
      }
      const current = [...byId.values()].filter((other) => other.id !== record.id);
      keep(byId, record);
      for (const revision of settleConflicts(record, current, record.recordedAt)) {
        keep(byId, revision);
        keep(revisions, revision);
      }
    }
    return [...revisions.values()];
  }

  /** Appends `MemoryRecorded` for each record with deterministic event ids (a replay appends nothing new). */
  private async appendMemoryEvents(tenant: string, records: MemoryRecord[]): Promise<void> {
    await this.deps.log.appendMany(await memoryVersionAppends(this.deps.sealer, tenant, records));
  }

  /** Opens events; an erased record (shredded key) is skipped, not an error: it must never come back. */
  private async openSkippingErased<T>(tenant: string, events: RecordedEvent[]): Promise<T[]> {
    if (events.length === 0) return [];
    try {
      return await this.deps.sealer.open<T>(tenant, events);
    } catch (error) {
      if (!(error instanceof KeyShredded)) throw error;
      const opened: T[] = [];
      for (const event of events) {
        try {
          opened.push(...(await this.deps.sealer.open<T>(tenant, [event])));
        } catch (inner) {
          if (!(inner instanceof KeyShredded)) throw inner;
        }
      }
      return opened;
    }
  }
}

export { memoryEventMetadata } from '../memory/memory-events';

