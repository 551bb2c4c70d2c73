import {
  EventIngested,
  episodeFollowingFact,
  episodicIdFor,
  extractedRecords,
  factKey,
  settleConflicts,
  type EventLog,
  type MemoryIndex,
  type MemoryRecord,
  type RecordedEvent,
  type ConflictSettlement,
} from '@elma/domain';
import type { EventSealer } from '../sealing/sealed-events';
import { memoryVersionAppends } from '../memory/memory-events';
import { openSkippingErased } from './open-skipping-erased';

/** Asks for a subject's consolidation; the subject is named by one of its records (never a person's id). */
export type ConsolidationTrigger = (tenant: string, subjectRef: string, reason: 'events' | 'session_end') => void;

/** The activity of an ingested event that ends a session and triggers its consolidation. */
export const SESSION_END = 'session.end';

/**
 * Metadata (in clear) of the memory events the processor appends. The pass
 * that appends one indexes its record before its checkpoint moves past the
 * source event, so the live pass reads the event back (its echo) without
 * indexing it again; a rebuild indexes it like any other memory event.
 */
export const ORIGIN = 'origin';
export const PROCESSOR_ORIGIN = 'processor';

/**
 * The pass reads each ingested event's key once, and the keys of the revisions
 * it appends not at all: kept in the vault's cache, they would push out the keys of the
 * events queued behind them, and a backlog larger than half the cache would
 * miss on every key. Keys already cached (an event ingested moments ago) are
 * still served from it.
 */
export const PASS_KEYS = { keep: false } as const;

/** True for a memory event appended by the processor (see `ORIGIN`). */
export const appendedByProcessor = (event: RecordedEvent): boolean => event.metadata[ORIGIN] === PROCESSOR_ORIGIN;

/**
 * Decides what the log's ingested events mean for memory: each ingested
 * event becomes an episodic memory, and a semantic one when it carries a
 * fact; new facts are settled against the current ones by the resolution
 * rules. The extracted first versions are a pure function of their event and
 * are not appended (the log keeps the event: docs/adr/0014); every later
 * decision (a revision) is appended as a `MemoryRecorded` event with a
 * deterministic id, so deciding on the same events again appends nothing
 * new. It never writes the index: the views do.
 */
export class MemoryProcessor {
  /** New events per subject since its last consolidation trigger (in memory: a restart only delays one). */
  private readonly sinceConsolidation = new Map<string, number>();
  private consolidation?: { trigger: ConsolidationTrigger; everyEvents: number };

  constructor(
    private readonly deps: {
      log: EventLog;
      index: Pick<MemoryIndex, 'currentFacts' | 'get'>;
      sealer: EventSealer;
      /** ELMA's conflict rules unless the evaluation's ablation asks for last write wins (default `rules`). */
      conflicts?: ConflictSettlement;
    },
  ) {}

  /**
   * Asks for consolidation of a subject after `everyEvents` new events, and
   * at once on a `session.end` event. The trigger must
   * not block: it starts a workflow and returns.
   */
  setConsolidationTrigger(trigger: ConsolidationTrigger, everyEvents: number): void {
    this.consolidation = { trigger, everyEvents };
  }

  /**
   * The memories a tenant's ingested events yield (their first versions, not appended: see
   * `extractedRecords`). The consolidation triggers they call for are returned, not fired: the caller fires
   * them once the records are in the index.
   */
  async derive(
    tenant: string,
    events: RecordedEvent[],
  ): Promise<{ records: Map<string, MemoryRecord>; ingested: EventIngested[]; triggers: (() => void)[] }> {
    const derived = new Map<string, MemoryRecord>();
    const ingested: EventIngested[] = [];
    const triggers: (() => void)[] = [];
    for (const event of await openSkippingErased<EventIngested>(this.deps.sealer, tenant, events, PASS_KEYS)) {
      const parsed = EventIngested.parse(event);
      ingested.push(parsed);
      for (const record of extractedRecords(parsed)) derived.set(record.id, record);
      this.countForConsolidation(tenant, parsed, triggers);
    }
    // A record erased on its own (its event kept, e.g. under a legal hold) must not be derived again.
    if (derived.size > 0) for (const id of await this.deps.sealer.erasedAmong(tenant, [...derived.keys()])) derived.delete(id);
    return { records: derived, ingested, triggers };
  }

  /**
   * New facts against the current records about the same entity and
   * attribute (and against each other, in order): the revisions the
   * resolution rules call for, each a new version recorded at the new fact's
   * transaction time, appended. Replaying the same facts yields the same
   * revisions. The current records are the index's: it must hold every
   * decision before these records.
   */
  async settle(tenant: string, records: MemoryRecord[]): Promise<MemoryRecord[]> {
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
      for (const revision of settleConflicts(record, current, record.recordedAt, this.deps.conflicts)) {
        keep(byId, revision);
        keep(revisions, revision);
      }
    }
    for (const episode of await this.episodesFollowing(tenant, [...revisions.values()], records)) keep(revisions, episode);
    if (revisions.size > 0) await this.append(tenant, [...revisions.values()]);
    return [...revisions.values()];
  }

  /** The revisions of the episodes whose extracted facts `facts` revised (see `episodeFollowingFact`). */
  private async episodesFollowing(tenant: string, facts: MemoryRecord[], batch: MemoryRecord[]): Promise<MemoryRecord[]> {
    const inBatch = new Map<string, MemoryRecord>();
    for (const record of batch) if ((inBatch.get(record.id)?.version ?? 0) < record.version) inBatch.set(record.id, record);
    const episodes: MemoryRecord[] = [];
    for (const fact of facts) {
      if (fact.kind !== 'semantic' || fact.provenance.sourceEventIds.length !== 1) continue;
      const id = episodicIdFor(fact.provenance.sourceEventIds[0]);
      const latest = episodes.findLast((e) => e.id === id) ?? inBatch.get(id) ?? (await this.deps.index.get(tenant, id))?.record;
      const revised = latest && episodeFollowingFact(fact, latest);
      if (revised) episodes.push(revised);
    }
    return episodes;
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

  /** Appends `MemoryRecorded` for each revision with deterministic event ids (a replay appends nothing new). */
  private async append(tenant: string, records: MemoryRecord[]): Promise<void> {
    await this.deps.log.appendMany(
      await memoryVersionAppends(this.deps.sealer, tenant, records, { metadata: { [ORIGIN]: PROCESSOR_ORIGIN }, ...PASS_KEYS }),
    );
  }
}
