import {
  EventIngested,
  IngestRequest,
  parseOrThrow,
  streams,
  type AppendRequest,
  type Clock,
  type EventLog,
  type IngestEventInput,
  type KeyVault,
  type Principal,
  type SourceTrust,
  EventAlreadyRecorded,
  KeyShredded,
  PolicyDenied,
  WrongExpectedVersion,
  cleanEvent,
  evaluate,
  expiryOf,
  subjectOf,
  writtenIdentity,
} from '@elma/domain';
import type { EventSealer } from '../sealing/sealed-events';
import { eventIdOf, keyedFingerprint, keyedUuid } from '@elma/shared';
import type { WriteTracker } from '../views/write-tracker';
import type { PolicyStore } from '../governance/policy-store';
import type { AuditLog } from '../audit/audit-log';
import type { ErasureGuard } from '../erasure/guard';

export interface IngestedRef {
  id: string;
  subject: string;
  /** True when this event had been ingested before (same idempotency key): nothing new was written. */
  duplicate: boolean;
}

/** Events ready to append, and the policy rules that allowed them. */
export interface PreparedBatch {
  events: EventIngested[];
  rules: string[];
  /** Sent as `{ events: [...] }` (error paths name `events.{i}`). */
  batch: boolean;
}

export interface IngestResult {
  events: IngestedRef[];
  /** Global log position after the write; pass it as `afterPosition` for read-your-writes. */
  position: string;
}

/** Event type of an idempotency claim. */
export const IDEMPOTENCY_CLAIMED = 'IdempotencyKeyClaimed';

/**
 * The fast write path (paper, section 5.1 'Write path', stage one): validate, derive idempotent ids, seal the
 * content, append. A batch is validated whole before anything is written and
 * appended in one atomic unit, so it is all or nothing. No model call here.
 *
 * Each event id is a keyed MAC of tenant and idempotency key, and each write
 * claims its id in a stream of its own (`idempotency-{tenant}-{eventId}`,
 * expected revision `no_stream`). The claim's event id is a keyed MAC of the
 * event id and what the key stands for (`writtenIdentity`), so through the
 * log's own idempotent-append rule a retry of the same event is a duplicate,
 * and the same key for another subject or other content fails the expected
 * revision: nothing of the batch is written and the caller gets 409. Only
 * the log port is used, so both engines behave alike, and of two concurrent
 * writers with one key the log lets exactly one claim it.
 */
export class IngestService {
  constructor(
    private readonly deps: {
      log: EventLog;
      sealer: EventSealer;
      clock: Clock;
      fingerprintKey: Uint8Array;
      /** Key of the event ids and idempotency claims: an id cannot be computed from public input without it. */
      eventIdKey: Uint8Array;
      writes: WriteTracker;
      policies: PolicyStore;
      audit: AuditLog;
      erased: ErasureGuard;
      /** Maps subjects to the pseudonyms their streams are named by. */
      vault: KeyVault;
    },
  ) {}

  async ingest(principal: Principal, body: unknown, requestId = 'internal'): Promise<IngestResult> {
    let prepared: PreparedBatch;
    try {
      prepared = await this.prepare(principal, body);
    } catch (error) {
      // A denial is audited; a malformed request never reached a decision.
      if (error instanceof PolicyDenied)
        await this.audit(principal, requestId, [], null, { effect: 'deny', rule: String(error.details.rule) });
      throw error;
    }
    const result = await this.append(principal, prepared.events, { batch: prepared.batch });
    const subjects = [...new Set(prepared.events.map((e) => e.subject))];
    await this.audit(
      principal,
      requestId,
      result.events.map((e) => e.id),
      subjects.length === 1 ? subjects[0] : null,
      {
        effect: 'allow',
        rule: prepared.rules.join(','),
      },
    );
    return result;
  }

  /**
   * Validates a request, applies ingest hygiene (secrets, sensitivity, trust,
   * retention) and the write policy, and turns it into the events to store
   * with their idempotent ids. Writes nothing: a batch with one bad event
   * fails whole here.
   */
  async prepare(principal: Principal, body: unknown, options: { hygiene?: boolean } = {}): Promise<PreparedBatch> {
    const request = parseOrThrow(IngestRequest, body);
    const batch = 'events' in request;
    const inputs = batch ? request.events : [request];
    const recordedAt = this.deps.clock.now().toISOString();
    const policy = await this.deps.policies.get(principal.tenant);
    const subject = subjectOf(principal);
    const rules = new Set<string>();
    const events = inputs.map((input, i) => {
      const path = batch ? `events.${i}.` : '';
      const cleaned = cleanEvent(input, path, policy, (secret) => keyedFingerprint(this.deps.fingerprintKey, 'secret', secret), {
        scan: options.hygiene !== false,
      });
      const purposes = input.purposes ?? (principal.purposes.length > 0 ? principal.purposes : ['general']);
      const decision = evaluate(
        policy,
        subject,
        {
          kind: 'episodic',
          sensitivity: cleaned.sensitivity,
          owner: input.subject,
          project: input.project,
          status: 'active',
          retentionClass: input.retention,
          purposes,
        },
        { purpose: purposes[0], channel: input.source.channel, now: recordedAt },
        'write',
      );
      if (!decision.allowed) throw new PolicyDenied('write', decision.ruleId);
      rules.add(decision.ruleId);
      return this.toIngested(principal, { ...cleaned.input, sensitivity: cleaned.sensitivity, purposes }, recordedAt, {
        sourceTrust: cleaned.sourceTrust,
        instructionLike: cleaned.instructionLike,
        expiresAt: expiryOf(input.retention, recordedAt, policy),
      });
    });
    await this.deps.erased.refuseErased(
      principal.tenant,
      events.map((event, i) => ({ path: batch ? `events.${i}.content` : 'content', subject: event.subject, content: event.content })),
    );
    return { events, rules: [...rules], batch };
  }

  private audit(
    principal: Principal,
    requestId: string,
    resourceIds: string[],
    subject: string | null,
    decision: { effect: 'allow' | 'deny'; rule: string },
  ) {
    return this.deps.audit.record({
      tenant: principal.tenant,
      actor: principal,
      subject,
      operation: 'write',
      resourceIds,
      decision,
      requestId,
    });
  }

  /** Seals and appends prepared events, with their idempotency claims, in one atomic unit. */
  async append(principal: Principal, ingested: EventIngested[], options: { batch?: boolean } = {}): Promise<IngestResult> {
    const tenant = principal.tenant;
    const batch = options.batch ?? ingested.length > 1;
    const pathOf = (i: number) => (batch ? `events.${i}.idempotencyKey` : 'idempotencyKey');
    // The same idempotency key twice in one batch is one event, and only if both say the same.
    const claims = new Map<string, { event: EventIngested; claimId: string }>();
    ingested.forEach((event, i) => {
      const claimId = keyedUuid(this.deps.eventIdKey, 'claim', tenant, event.eventId, writtenIdentity(event));
      const seen = claims.get(event.eventId);
      if (seen && seen.claimId !== claimId) throw new EventAlreadyRecorded(pathOf(i));
      if (!seen) claims.set(event.eventId, { event, claimId });
    });
    const unique = [...claims.values()];
    // One vault round trip and one sealing pass for the whole batch, then one append request per subject stream.
    let sealed;
    try {
      sealed = await this.deps.sealer.seal(
        tenant,
        unique.map(({ event }) => ({ id: event.eventId, type: 'EventIngested', keyId: event.eventId, data: event })),
      );
    } catch (error) {
      // The key of this id was shredded: the idempotency key belonged to an erased event and stays used.
      if (error instanceof KeyShredded) throw new EventAlreadyRecorded(pathOf(ingested.findIndex((e) => e.eventId === error.recordId)));
      throw error;
    }
    // Claims go first: EventStoreDB writes the requests of a batch in order, so a lost claim stops the batch before its events.
    const claimRequests: AppendRequest[] = unique.map(({ event, claimId }) => ({
      stream: streams.idempotency(tenant, event.eventId),
      events: [{ id: claimId, type: IDEMPOTENCY_CLAIMED, data: { eventId: event.eventId }, metadata: { tenant } }],
      expectedRevision: 'no_stream',
    }));
    const pseudonyms = await this.deps.vault.subjectPseudonyms(
      tenant,
      unique.map(({ event }) => event.subject),
      { create: true },
    );
    const bySubject = new Map<string, AppendRequest>();
    unique.forEach(({ event }, i) => {
      const stream = streams.events(tenant, pseudonyms.get(event.subject)!);
      const request = bySubject.get(stream) ?? { stream, events: [], expectedRevision: 'any' as const };
      request.events.push(sealed[i]);
      bySubject.set(stream, request);
    });
    const eventRequests = [...bySubject.values()];
    const before = await this.deps.log.headPosition();
    const results = await this.appendClaimed([...claimRequests, ...eventRequests], (stream) => {
      const i = claimRequests.findIndex((r) => r.stream === stream);
      return i >= 0 ? pathOf(ingested.indexOf(unique[i].event)) : undefined;
    });
    const position = results.reduce((max, r) => (r.position > max ? r.position : max), before);
    this.deps.writes.record(principal, position);

    const claimed = new Set(unique.filter((_, i) => results[i].duplicate).map(({ event }) => event.eventId));
    const stored = new Set(
      eventRequests.filter((_, i) => results[claimRequests.length + i].duplicate).flatMap((r) => r.events.map((e) => e.id)),
    );
    return {
      events: ingested.map((event) => ({
        id: event.eventId,
        subject: event.subject,
        duplicate: claimed.has(event.eventId) && stored.has(event.eventId),
      })),
      position: position.toString(),
    };
  }

  /**
   * Appends once more after a lost claim: a concurrent writer of the very same
   * event may have claimed it between this writer's check and its write
   * (EventStoreDB checks, then writes), and the second attempt sees that claim
   * as a duplicate. A claim that is still taken is another event's: 409.
   */
  private async appendClaimed(requests: AppendRequest[], claimPath: (stream: string) => string | undefined) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.deps.log.appendMany(requests);
      } catch (error) {
        const path = error instanceof WrongExpectedVersion ? claimPath(error.streamName) : undefined;
        if (path === undefined) throw error;
        if (attempt === 2) throw new EventAlreadyRecorded(path);
      }
    }
  }

  private toIngested(
    principal: Principal,
    input: IngestEventInput,
    recordedAt: string,
    derived: { sourceTrust: SourceTrust; instructionLike: boolean; expiresAt: string | null },
  ): EventIngested {
    const idempotencyKey =
      input.idempotencyKey ??
      keyedFingerprint(
        this.deps.fingerprintKey,
        input.source.system,
        input.source.externalId ?? `${input.subject}@${input.occurredAt}`,
        JSON.stringify(input.content),
      );
    return {
      eventId: eventIdOf(this.deps.eventIdKey, principal.tenant, idempotencyKey),
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
      expiresAt: derived.expiresAt,
      sourceTrust: derived.sourceTrust,
      ...(derived.instructionLike ? { instructionLike: true } : {}),
      ...(input.project ? { project: input.project } : {}),
      ...(input.session !== undefined ? { session: input.session } : {}),
      idempotencyKey,
      actor: principal.sub,
    };
  }
}
