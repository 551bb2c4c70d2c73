import {
  EventIngested,
  IngestRequest,
  parseOrThrow,
  streams,
  type AppendRequest,
  type Clock,
  type EventLog,
  type IngestEventInput,
  type Principal,
} from '@elma/domain';
import type { EventSealer } from '../sealing/sealed-events';
import { deterministicUuid, keyedFingerprint } from './ids';
import type { WriteTracker } from '../projection/write-tracker';

export interface IngestedRef {
  id: string;
  subject: string;
  /** True when this event had been ingested before (same idempotency key): nothing new was written. */
  duplicate: boolean;
}

export interface IngestResult {
  events: IngestedRef[];
  /** Global log position after the write; pass it as `afterPosition` for read-your-writes. */
  position: string;
}

/**
 * The fast write path (§5.1 step 1): validate, derive idempotent ids, seal the
 * content, append. A batch is validated whole before anything is written and
 * appended in one atomic unit, so it is all or nothing. No model call here.
 */
export class IngestService {
  constructor(
    private readonly deps: {
      log: EventLog;
      sealer: EventSealer;
      clock: Clock;
      fingerprintKey: Uint8Array;
      writes: WriteTracker;
    },
  ) {}

  async ingest(principal: Principal, body: unknown): Promise<IngestResult> {
    return this.append(principal, this.prepare(principal, body));
  }

  /** Validates a request and turns it into the events to store, with their idempotent ids. Writes nothing. */
  prepare(principal: Principal, body: unknown): EventIngested[] {
    const request = parseOrThrow(IngestRequest, body);
    const inputs = 'events' in request ? request.events : [request];
    const recordedAt = this.deps.clock.now().toISOString();
    return inputs.map((input) => this.toIngested(principal, input, recordedAt));
  }

  /** Seals and appends prepared events in one atomic unit. */
  async append(principal: Principal, ingested: EventIngested[]): Promise<IngestResult> {
    const tenant = principal.tenant;
    // The same idempotency key twice in one batch is one event.
    const unique = [...new Map(ingested.map((event) => [event.eventId, event])).values()];
    // One vault round trip and one sealing pass for the whole batch, then one append request per subject stream.
    const sealed = await this.deps.sealer.seal(
      tenant,
      unique.map((event) => ({ id: event.eventId, type: 'EventIngested', keyId: event.eventId, data: event })),
    );
    const bySubject = new Map<string, AppendRequest>();
    unique.forEach((event, i) => {
      const stream = streams.events(tenant, event.subject);
      const request = bySubject.get(stream) ?? { stream, events: [], expectedRevision: 'any' as const };
      request.events.push(sealed[i]);
      bySubject.set(stream, request);
    });
    const requests = [...bySubject.values()];
    const before = await this.deps.log.headPosition();
    const results = await this.deps.log.appendMany(requests);
    const position = results.reduce((max, r) => (r.position > max ? r.position : max), before);
    this.deps.writes.record(principal, position);

    const duplicates = new Set(requests.filter((_, i) => results[i].duplicate).flatMap((r) => r.events.map((e) => e.id)));
    return {
      events: ingested.map((event) => ({ id: event.eventId, subject: event.subject, duplicate: duplicates.has(event.eventId) })),
      position: position.toString(),
    };
  }

  private toIngested(principal: Principal, input: IngestEventInput, recordedAt: string): EventIngested {
    const idempotencyKey =
      input.idempotencyKey ??
      keyedFingerprint(
        this.deps.fingerprintKey,
        input.source.system,
        input.source.externalId ?? `${input.subject}@${input.occurredAt}`,
        JSON.stringify(input.content),
      );
    return {
      eventId: deterministicUuid(principal.tenant, idempotencyKey),
      tenant: principal.tenant,
      subject: input.subject,
      occurredAt: input.occurredAt,
      recordedAt,
      activity: input.activity,
      content: input.content,
      source: input.source,
      sensitivity: input.sensitivity,
      purposes: input.purposes ?? (principal.purposes.length > 0 ? principal.purposes : ['general']),
      retention: input.retention,
      idempotencyKey,
      actor: principal.sub,
    };
  }
}
