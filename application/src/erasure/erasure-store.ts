import {
  ERASURE_EVENT_TYPES,
  ErasureNotFound,
  StoredErasureScope,
  Workset,
  erasureDecider,
  erasureSteps,
  parseStreamName,
  streams,
  type ApproverName,
  type AuditAnchor,
  type ErasureAbandonment,
  type ErasureCommand,
  type ErasureEvent,
  type ErasureRequestRecord,
  type ErasureScope,
  type ErasureState,
  type ErasureStep,
  type EventData,
  type EventLog,
  type SignedCertificate,
  type StepRecord,
} from '@elma/domain';
import { deterministicUuid } from '@elma/shared';
import { foldStream, handleCommand, type Folded } from '../command/handle-command';
import type { EventSealer } from '../sealing/sealed-events';

export type { ErasureAbandonment, ErasureRequestRecord, Requester, Workset, WorksetRecord } from '@elma/domain';

/** A captured workset, as the log lists it (no content). */
export interface CapturedWorkset {
  tenant: string;
  requestId: string;
  capturedAt: Date;
}

/**
 * One erasure as its stream stood when a step read it: the fold of
 * `erasure-{tenant}-{requestId}`, read once per step and passed along.
 * Writes through the store move it forward, so the step decides on what it
 * wrote itself without reading again. Sealed parts are opened on demand
 * (once each).
 */
export class Erasure {
  private openedScope?: Promise<ErasureScope>;
  private openedWorkset?: Promise<Workset | undefined>;

  constructor(
    readonly tenant: string,
    readonly requestId: string,
    public folded: Folded<ErasureState>,
    private readonly sealer: EventSealer,
  ) {}

  get exists(): boolean {
    return this.folded.state.request !== null;
  }

  /** The request without its scope (readable for the stream's whole life); throws `ErasureNotFound`. */
  get request(): ErasureRequestRecord {
    const { request } = this.folded.state;
    if (!request) throw new ErasureNotFound(this.requestId);
    return request;
  }

  /** The scope; throws `KeyShredded` once the erasure is certified or abandoned. */
  scope(): Promise<ErasureScope> {
    const sealed = this.folded.state.sealedScope;
    if (!sealed) return Promise.reject(new ErasureNotFound(this.requestId));
    this.openedScope ??= this.sealer
      .openValue(this.tenant, ErasureStore.keyId(this.requestId), sealed)
      .then((v) => StoredErasureScope.parse(v));
    return this.openedScope;
  }

  workset(): Promise<Workset | undefined> {
    const sealed = this.folded.state.sealedWorkset;
    if (!sealed) return Promise.resolve(undefined);
    this.openedWorkset ??= this.sealer.openValue(this.tenant, ErasureStore.keyId(this.requestId), sealed).then((v) => Workset.parse(v));
    return this.openedWorkset;
  }

  /** Finished steps in the order they were recorded; the first record of a step wins. */
  get steps(): Map<ErasureStep, StepRecord> {
    return erasureSteps(this.folded.state);
  }

  get auditAnchor(): AuditAnchor | undefined {
    return this.folded.state.auditAnchor ?? undefined;
  }

  get certificate(): SignedCertificate | undefined {
    return this.folded.state.certificate ?? undefined;
  }

  /** The display name an approver's token gave, by the approver's subject. */
  approverName(sub: string | null): string | undefined {
    return sub === null ? undefined : this.folded.state.approverNames[sub];
  }

  get abandonment(): ErasureAbandonment | undefined {
    return this.folded.state.abandonment ?? undefined;
  }
}

/**
 * The erasure stream `erasure-{tenant}-{requestId}`: the request, the
 * captured workset, each finished step, the closing audit anchor and the
 * certificate. Scope and workset are sealed under the request's own data key
 * (`erasure:{requestId}`), which is shredded once the certificate is stored,
 * or once the request is abandoned without one (`ErasureAbandoned`): what
 * stays readable afterwards is ids, counts, times and the certificate.
 * Every append has a deterministic event id, so a retried step writes nothing twice.
 * Writes go through `handleCommand` with the erasure decider.
 */
export class ErasureStore {
  constructor(private readonly deps: { log: EventLog; sealer: EventSealer }) {}

  static keyId(requestId: string): string {
    return `erasure:${requestId}`;
  }

  /** Reads the stream once (a dozen small events) and folds it. */
  async load(tenant: string, requestId: string): Promise<Erasure> {
    return new Erasure(
      tenant,
      requestId,
      await foldStream(this.deps.log, streams.erasure(tenant, requestId), erasureDecider),
      this.deps.sealer,
    );
  }

  /** `load`, for a step that needs the request: throws `ErasureNotFound` when there is none. */
  async loadRequest(tenant: string, requestId: string): Promise<Erasure> {
    const erasure = await this.load(tenant, requestId);
    if (!erasure.exists) throw new ErasureNotFound(requestId);
    return erasure;
  }

  async create(request: ErasureRequestRecord, scope: ErasureScope): Promise<void> {
    const erasure = new Erasure(
      request.tenant,
      request.requestId,
      { state: erasureDecider.initialState(), revision: -1n },
      this.deps.sealer,
    );
    const sealed = await this.deps.sealer.sealValue(request.tenant, ErasureStore.keyId(request.requestId), scope);
    await this.handle(erasure, { type: 'RequestErasure', request, scope: sealed });
  }

  /** Stores the workset once; a retry keeps the first capture (the index no longer holds what it came from). */
  async saveWorkset(erasure: Erasure, workset: Workset): Promise<void> {
    if (erasure.folded.state.sealedWorkset) return;
    const sealed = await this.deps.sealer.sealValue(erasure.tenant, ErasureStore.keyId(erasure.requestId), workset);
    await this.handle(erasure, { type: 'CaptureWorkset', requestId: erasure.requestId, workset: sealed });
  }

  /** Records a finished step; the first record of a step wins (a retry after a crash does not move its times). */
  async completeStep(erasure: Erasure, record: StepRecord): Promise<boolean> {
    return (await this.handle(erasure, { type: 'CompleteStep', requestId: erasure.requestId, record })) > 0;
  }

  async saveAuditAnchor(erasure: Erasure, anchor: AuditAnchor): Promise<void> {
    await this.handle(erasure, { type: 'CloseAudit', requestId: erasure.requestId, anchor });
  }

  async saveCertificate(erasure: Erasure, signed: SignedCertificate): Promise<void> {
    await this.handle(erasure, { type: 'Certify', requestId: erasure.requestId, certificate: signed });
  }

  /** Records an approver's display name, until the certificate is written. */
  async nameApprover(tenant: string, requestId: string, approver: ApproverName): Promise<void> {
    const erasure = await this.loadRequest(tenant, requestId);
    await this.handle(erasure, { type: 'NameApprover', requestId, approver });
  }

  /** Records the end of a request without certificate; the first record wins. */
  async saveAbandonment(erasure: Erasure, abandonment: ErasureAbandonment): Promise<void> {
    await this.handle(erasure, { type: 'Abandon', requestId: erasure.requestId, abandonment });
  }

  // Reads of one fact, each a read of the stream: for callers outside the workflow's steps (the API, tests).

  async request(tenant: string, requestId: string): Promise<ErasureRequestRecord> {
    return (await this.load(tenant, requestId)).request;
  }

  async scope(tenant: string, requestId: string): Promise<ErasureScope> {
    return (await this.load(tenant, requestId)).scope();
  }

  async exists(tenant: string, requestId: string): Promise<boolean> {
    return (await this.load(tenant, requestId)).exists;
  }

  async workset(tenant: string, requestId: string): Promise<Workset | undefined> {
    return (await this.load(tenant, requestId)).workset();
  }

  async steps(tenant: string, requestId: string): Promise<Map<ErasureStep, StepRecord>> {
    return (await this.load(tenant, requestId)).steps;
  }

  async certificate(tenant: string, requestId: string): Promise<SignedCertificate | undefined> {
    return (await this.load(tenant, requestId)).certificate;
  }

  async abandonment(tenant: string, requestId: string): Promise<ErasureAbandonment | undefined> {
    return (await this.load(tenant, requestId)).abandonment;
  }

  /** Every workset captured and not yet closed by a certificate or an abandonment, oldest first. */
  async *openWorksets(): AsyncIterable<CapturedWorkset> {
    const open = new Map<string, CapturedWorkset>();
    const closed = new Set<string>();
    const { workset, certified, abandoned } = ERASURE_EVENT_TYPES;
    for await (const event of this.deps.log.readAll({
      filter: { streamNamePrefix: [streams.categories.erasure], eventType: [workset, certified, abandoned] },
    })) {
      const name = parseStreamName(event.streamId);
      if (!name) continue;
      if (event.type === workset) open.set(event.streamId, { tenant: name.tenant, requestId: name.id, capturedAt: event.created });
      else closed.add(event.streamId);
    }
    for (const [stream, captured] of open) if (!closed.has(stream)) yield captured;
  }

  /** Runs one command on the erasure's stream and moves the erasure forward; the number of events it recorded. */
  private async handle(erasure: Erasure, command: ErasureCommand): Promise<number> {
    const { tenant, requestId } = erasure;
    const handled = await handleCommand(this.deps.log, streams.erasure(tenant, requestId), erasureDecider, command, {
      from: erasure.folded,
      toEventData: (event) => this.toEventData(tenant, requestId, event),
    });
    erasure.folded = { state: handled.state, revision: handled.revision };
    return handled.events.length;
  }

  /** Ids as before the decider: per request and type, per step for steps; sealed events name their key. */
  private toEventData(tenant: string, requestId: string, event: ErasureEvent): EventData {
    switch (event.type) {
      case 'ErasureRequested':
      case 'ErasureWorksetCaptured':
        return {
          id: deterministicUuid(event.type, tenant, requestId),
          type: event.type,
          data: event.data,
          metadata: { tenant, keyId: ErasureStore.keyId(requestId) },
        };
      case 'ErasureStepCompleted':
        return {
          id: deterministicUuid('erasure-step', tenant, requestId, event.data.step),
          type: event.type,
          data: event.data,
          metadata: { tenant },
        };
      case 'ErasureAuditClosed':
        return { id: deterministicUuid('erasure-audit', tenant, requestId), type: event.type, data: event.data, metadata: { tenant } };
      case 'ErasureCertified':
        return {
          id: deterministicUuid('erasure-certificate', tenant, requestId),
          type: event.type,
          data: event.data,
          metadata: { tenant },
        };
      case 'ErasureAbandoned':
        return { id: deterministicUuid('erasure-abandoned', tenant, requestId), type: event.type, data: event.data, metadata: { tenant } };
      case 'ErasureApproverNamed':
        return {
          id: deterministicUuid('erasure-approver-named', tenant, requestId, event.data.sub, event.data.name),
          type: event.type,
          data: event.data,
          metadata: { tenant },
        };
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  }
}
