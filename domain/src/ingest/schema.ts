import { z } from 'zod';
import { Fact, MemoryContent, Purpose, RetentionClass, Sensitivity, SourceTrust } from '../memory/record';
import { SessionId } from '../memory/write';

export const MAX_BATCH = 1000;

const IsoDate = z.iso.datetime({ offset: true });

/** One event as a client sends it to `POST /v1/events`. */
export const IngestEventInput = z.strictObject({
  subject: z.string().min(1).max(200),
  occurredAt: IsoDate,
  activity: z.string().min(1).max(100),
  content: MemoryContent,
  source: z.strictObject({
    system: z.string().min(1).max(100),
    externalId: z.string().min(1).max(200).optional(),
    channel: z.string().min(1).max(50).optional(),
  }),
  sensitivity: Sensitivity.default('internal'),
  purposes: z.array(Purpose).min(1).max(20).optional(),
  retention: RetentionClass.default('standard'),
  /** The business project the event belongs to (an ABAC attribute of the memories derived from it). */
  project: z.string().min(1).max(100).optional(),
  /**
   * The conversation the event belongs to. Its episodic memory carries it, so
   * that recall can look at the turns around a hit of the same conversation;
   * it does not restrict who sees the memory (only working memories are session-bound).
   */
  session: SessionId.optional(),
  idempotencyKey: z.string().min(1).max(200).optional(),
});
export type IngestEventInput = z.infer<typeof IngestEventInput>;

/** `POST /v1/events` takes one event or `{ events: [...] }` with up to 1,000; a batch is all or nothing. */
export const IngestRequest = z.union([z.strictObject({ events: z.array(IngestEventInput).min(1).max(MAX_BATCH) }), IngestEventInput]);
export type IngestRequest = z.infer<typeof IngestRequest>;

/** The stored form of an ingested event (type `EventIngested` in `events-{tenant}-{subjectPseudonym}`). */
export const EventIngested = z.object({
  eventId: z.string(),
  tenant: z.string(),
  subject: z.string(),
  occurredAt: IsoDate,
  recordedAt: IsoDate,
  activity: z.string(),
  content: MemoryContent,
  source: z.object({ system: z.string(), externalId: z.string().optional(), channel: z.string().optional() }),
  sensitivity: Sensitivity,
  purposes: z.array(z.string()),
  retention: RetentionClass,
  /** When memories derived from this event stop being recalled (null: never, e.g. legal_hold). */
  expiresAt: IsoDate.nullable().optional(),
  /** Trust tier of the source, resolved at ingest from the tenant's registered sources and the channel. */
  sourceTrust: SourceTrust.optional(),
  /**
   * Set (true) when ingest hygiene found instruction-like text in content
   * from an external or model source; absent otherwise, and on events
   * ingested before the check existed (replays never re-decide it).
   */
  instructionLike: z.boolean().optional(),
  project: z.string().optional(),
  /** The conversation the event belongs to (see IngestEventInput). */
  session: z.string().optional(),
  idempotencyKey: z.string(),
  actor: z.string(),
});
export type EventIngested = z.infer<typeof EventIngested>;

export { Fact };
