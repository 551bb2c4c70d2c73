import {
  EventIngested,
  MemoryRecorded,
  extractedRecords,
  withSourcesOf,
  type MemoryIndex,
  type MemoryRecord,
  type RecordedEvent,
} from '@elma/domain';
import type { EventSealer } from '../sealing/sealed-events';
import { MEMORY_ID, VERSION } from '../memory/memory-events';
import { openSkippingErased } from './open-skipping-erased';
import { PASS_KEYS } from './memory-processor';

/**
 * The index views of memory: memory events become index rows (tokenised by
 * the index, so BM25 finds them at once; not embedded: the `EmbeddingStage`
 * gives them their vectors in the background, so the projection, and a strong
 * read waiting for it, never waits for the embedder). It decides nothing:
 * what a memory is was decided when its event was appended, and the first
 * versions extracted from an ingested event are the rule's pure function of
 * it (`extractedRecords`), which the log holds as that event. Idempotent: a
 * version the index already holds is passed over, so replaying any part of
 * the log changes nothing.
 */
export class MemoryViews {
  constructor(private readonly deps: { index: MemoryIndex; sealer: EventSealer }) {}

  /** Applies a tenant's ingested and memory events (in log order); returns how many records it indexed. */
  async apply(tenant: string, events: RecordedEvent[]): Promise<number> {
    const records = [...(await this.open(tenant, events)).values()];
    await this.index(tenant, records);
    return records.length;
  }

  /**
   * The records of ingested and memory events the index does not hold yet at
   * their version, by id (the latest version wins; of the same version, the
   * logged one); erased ones are skipped.
   */
  async open(tenant: string, events: RecordedEvent[]): Promise<Map<string, MemoryRecord>> {
    const records = new Map<string, MemoryRecord>();
    const keep = (record: MemoryRecord) => {
      const known = records.get(record.id);
      if (!known || known.version <= record.version) records.set(record.id, record);
    };
    const ingested = events.filter((e) => e.type === 'EventIngested');
    const extracted = (await openSkippingErased<EventIngested>(this.deps.sealer, tenant, ingested, PASS_KEYS)).flatMap((event) =>
      extractedRecords(EventIngested.parse(event)),
    );
    // A record erased on its own (its event kept, e.g. under a legal hold) must not come back.
    const erased =
      extracted.length > 0
        ? await this.deps.sealer.erasedAmong(
            tenant,
            extracted.map((r) => r.id),
          )
        : new Set<string>();
    for (const record of extracted) {
      if (erased.has(record.id)) continue;
      const current = await this.deps.index.get(tenant, record.id);
      if (!current || current.record.version < record.version) keep(record);
    }
    const pending: RecordedEvent[] = [];
    for (const event of events) {
      if (event.type !== 'MemoryRecorded') continue;
      const current = await this.deps.index.get(tenant, String(event.metadata[MEMORY_ID]));
      if (current && current.record.version >= Number(event.metadata[VERSION])) continue;
      pending.push(event);
    }
    for (const event of await openSkippingErased<MemoryRecorded>(this.deps.sealer, tenant, pending, PASS_KEYS)) {
      const record = MemoryRecorded.parse(event).record;
      // A revision logged before records kept their sources takes them from the version it follows.
      const earlier =
        record.sources === undefined ? (records.get(record.id) ?? (await this.deps.index.get(tenant, record.id))?.record) : undefined;
      keep(withSourcesOf(record, earlier));
    }
    return records;
  }

  /** Upserts the records without vectors (pending for the embedding stage), in one index write. */
  async index(tenant: string, records: MemoryRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.deps.index.upsert(
      tenant,
      records.map((record) => ({ record })),
    );
  }
}
