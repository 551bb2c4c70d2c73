import {
  ErasureNotFound,
  SignedCertificate,
  parseStreamName,
  streams,
  type ErasureReason,
  type ErasureScope,
  type ErasureStep,
  type EventLog,
  type MemoryKind,
  type RecordedEvent,
  type StepRecord,
} from '@elma/domain';
import { deterministicUuid } from '../ingest/ids';
import type { EventSealer } from '../sealing/sealed-events';

/** Who asked, as the token said (ids and roles only). */
export interface Requester {
  sub: string;
  roles: string[];
  clearance: 'public' | 'internal' | 'confidential' | 'restricted';
  project?: string;
  department?: string;
}

export interface ErasureRequestRecord {
  requestId: string;
  tenant: string;
  reason: ErasureReason;
  requestedBy: Requester;
  requestedAt: string;
}

/** What verification needs once the records are gone; sealed under the request key. */
export interface WorksetRecord {
  id: string;
  kind: MemoryKind;
  subject: string;
  text: string;
  /** The record's most distinctive words, for the BM25 probe. */
  terms: string[];
  /** The stored vector, base64 of its float32 bytes. */
  vector: string;
}

export interface Workset {
  records: WorksetRecord[];
  /** Stream of each ingested event of the closure. */
  eventStreams: Record<string, string>;
}

const TYPES = {
  requested: 'ErasureRequested',
  workset: 'ErasureWorksetCaptured',
  step: 'ErasureStepCompleted',
  auditClosed: 'ErasureAuditClosed',
  certified: 'ErasureCertified',
  abandoned: 'ErasureAbandoned',
} as const;

/** Why an erasure ended without a certificate: a failure code, ids only. */
export interface ErasureAbandonment {
  outcome: string;
  at: string;
}

/** A captured workset, as the log lists it (no content). */
export interface CapturedWorkset {
  tenant: string;
  requestId: string;
  capturedAt: Date;
}

/**
 * The erasure stream `erasure-{tenant}-{requestId}`: the request, the
 * captured workset, each finished step, the closing audit anchor and the
 * certificate. Scope and workset are sealed under the request's own data key
 * (`erasure:{requestId}`), which is shredded once the certificate is stored,
 * or once the request is abandoned without one (`ErasureAbandoned`): what
 * stays readable afterwards is ids, counts, times and the certificate.
 * Every append has a deterministic event id, so a retried step writes nothing twice.
 */
export class ErasureStore {
  constructor(private readonly deps: { log: EventLog; sealer: EventSealer }) {}

  static keyId(requestId: string): string {
    return `erasure:${requestId}`;
  }

  async create(request: ErasureRequestRecord, scope: ErasureScope): Promise<void> {
    await this.appendSealed(request.tenant, request.requestId, TYPES.requested, { ...request, scope }, 'no_stream');
  }

  /** The request without its scope (readable for the stream's whole life); throws `ErasureNotFound`. */
  async request(tenant: string, requestId: string): Promise<ErasureRequestRecord> {
    const event = await this.first(tenant, requestId, TYPES.requested);
    if (!event) throw new ErasureNotFound(requestId);
    const { scope: _sealed, ...request } = event.data as ErasureRequestRecord & { scope: unknown };
    return request;
  }

  /** The scope; throws `KeyShredded` once the erasure is certified. */
  async scope(tenant: string, requestId: string): Promise<ErasureScope> {
    const event = await this.first(tenant, requestId, TYPES.requested);
    if (!event) throw new ErasureNotFound(requestId);
    const [opened] = await this.deps.sealer.open<{ scope: ErasureScope }>(tenant, [event]);
    return opened.scope;
  }

  async exists(tenant: string, requestId: string): Promise<boolean> {
    return (await this.first(tenant, requestId, TYPES.requested)) !== undefined;
  }

  /** Stores the workset once; a retry keeps the first capture (the index no longer holds what it came from). */
  async saveWorkset(tenant: string, requestId: string, workset: Workset): Promise<void> {
    if (await this.first(tenant, requestId, TYPES.workset)) return;
    await this.appendSealed(tenant, requestId, TYPES.workset, { workset }, 'any');
  }

  async workset(tenant: string, requestId: string): Promise<Workset | undefined> {
    const event = await this.first(tenant, requestId, TYPES.workset);
    if (!event) return undefined;
    const [opened] = await this.deps.sealer.open<{ workset: Workset }>(tenant, [event]);
    return opened.workset;
  }

  /** Records a finished step; the first record of a step wins (a retry after a crash does not move its times). */
  async completeStep(tenant: string, requestId: string, record: StepRecord): Promise<boolean> {
    const result = await this.deps.log.append(
      streams.erasure(tenant, requestId),
      [{ id: deterministicUuid('erasure-step', tenant, requestId, record.step), type: TYPES.step, data: record, metadata: { tenant } }],
      { expectedRevision: 'any' },
    );
    return !result.duplicate;
  }

  async steps(tenant: string, requestId: string): Promise<Map<ErasureStep, StepRecord>> {
    const steps = new Map<ErasureStep, StepRecord>();
    for (const event of await this.all(tenant, requestId)) {
      if (event.type !== TYPES.step) continue;
      const record = event.data as StepRecord;
      if (!steps.has(record.step)) steps.set(record.step, record);
    }
    return steps;
  }

  async auditAnchor(tenant: string, requestId: string): Promise<{ seq: number; hash: string } | undefined> {
    return (await this.first(tenant, requestId, TYPES.auditClosed))?.data as { seq: number; hash: string } | undefined;
  }

  async saveAuditAnchor(tenant: string, requestId: string, anchor: { seq: number; hash: string }): Promise<void> {
    await this.deps.log.append(
      streams.erasure(tenant, requestId),
      [{ id: deterministicUuid('erasure-audit', tenant, requestId), type: TYPES.auditClosed, data: anchor, metadata: { tenant } }],
      { expectedRevision: 'any' },
    );
  }

  async certificate(tenant: string, requestId: string): Promise<SignedCertificate | undefined> {
    const event = await this.first(tenant, requestId, TYPES.certified);
    return event ? SignedCertificate.parse(event.data) : undefined;
  }

  async saveCertificate(tenant: string, requestId: string, signed: SignedCertificate): Promise<void> {
    await this.deps.log.append(
      streams.erasure(tenant, requestId),
      [{ id: deterministicUuid('erasure-certificate', tenant, requestId), type: TYPES.certified, data: signed, metadata: { tenant } }],
      { expectedRevision: 'any' },
    );
  }

  async abandonment(tenant: string, requestId: string): Promise<ErasureAbandonment | undefined> {
    return (await this.first(tenant, requestId, TYPES.abandoned))?.data as ErasureAbandonment | undefined;
  }

  /** Records the end of a request without certificate; the first record wins. */
  async saveAbandonment(tenant: string, requestId: string, abandonment: ErasureAbandonment): Promise<void> {
    await this.deps.log.append(
      streams.erasure(tenant, requestId),
      [{ id: deterministicUuid('erasure-abandoned', tenant, requestId), type: TYPES.abandoned, data: abandonment, metadata: { tenant } }],
      { expectedRevision: 'any' },
    );
  }

  /** Every workset captured and not yet closed by a certificate or an abandonment, oldest first. */
  async *openWorksets(): AsyncIterable<CapturedWorkset> {
    const open = new Map<string, CapturedWorkset>();
    const closed = new Set<string>();
    for await (const event of this.deps.log.readAll({
      filter: { streamNamePrefix: [streams.categories.erasure], eventType: [TYPES.workset, TYPES.certified, TYPES.abandoned] },
    })) {
      const name = parseStreamName(event.streamId);
      if (!name) continue;
      if (event.type === TYPES.workset) open.set(event.streamId, { tenant: name.tenant, requestId: name.id, capturedAt: event.created });
      else closed.add(event.streamId);
    }
    for (const [stream, workset] of open) if (!closed.has(stream)) yield workset;
  }

  private async appendSealed(
    tenant: string,
    requestId: string,
    type: string,
    data: Record<string, unknown>,
    expectedRevision: 'no_stream' | 'any',
  ): Promise<void> {
    const sealed = await this.deps.sealer.seal(tenant, [
      { id: deterministicUuid(type, tenant, requestId), type, keyId: ErasureStore.keyId(requestId), data },
    ]);
    await this.deps.log.append(streams.erasure(tenant, requestId), sealed, { expectedRevision });
  }

  private async first(tenant: string, requestId: string, type: string): Promise<RecordedEvent | undefined> {
    return (await this.all(tenant, requestId)).find((e) => e.type === type);
  }

  /** An erasure stream holds a dozen small events, so it is read whole. */
  private async all(tenant: string, requestId: string): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    for await (const event of this.deps.log.readStream(streams.erasure(tenant, requestId))) events.push(event);
    return events;
  }
}
