import { z } from 'zod';
import { eventParser, type Decider } from '../shared/decider';
import { MemoryKind, Sensitivity } from '../memory/record';
import { SignedCertificate } from './certificate';
import { ERASURE_STEPS, ErasureNotFound, ErasureReason, type ErasureScope, type ErasureStep, type StepRecord } from './erasure';

/**
 * The erasure stream `erasure-{tenant}-{requestId}`: the request, the
 * captured workset, each finished step, the closing audit anchor, and the
 * certificate or the abandonment. Scope and workset are sealed under the
 * request's own data key before they reach the decider: it keeps them as
 * opaque envelopes, and only their holder of the key opens them.
 */

/** A value sealed under a data key (AES-256-GCM, binary fields base64), as the log stores it. */
export const SealedValue = z.object({ v: z.literal(1), alg: z.literal('A256GCM'), iv: z.string(), tag: z.string(), ct: z.string() });
export type SealedValue = z.infer<typeof SealedValue>;

/** Who asked, as the token said (ids and roles only). */
export const Requester = z.object({
  sub: z.string(),
  roles: z.array(z.string()),
  clearance: Sensitivity,
  project: z.string().optional(),
  department: z.string().optional(),
  /** The requester's display name, for the certificate; never recorded for a data subject asking about their own records. */
  name: z.string().optional(),
});
export type Requester = z.infer<typeof Requester>;

export const ErasureRequestRecord = z.object({
  requestId: z.string(),
  tenant: z.string(),
  reason: ErasureReason,
  requestedBy: Requester,
  requestedAt: z.string(),
});
export type ErasureRequestRecord = z.infer<typeof ErasureRequestRecord>;

/** The scope as sealed in the request (read back once opened). */
export const StoredErasureScope = z.discriminatedUnion('type', [
  z.object({ type: z.literal('records'), recordIds: z.array(z.string()) }),
  z.object({ type: z.literal('subject'), subject: z.string() }),
  z.object({ type: z.literal('time_range'), from: z.string(), to: z.string(), subject: z.string().optional() }),
  z.object({ type: z.literal('fingerprint'), fingerprint: z.string() }),
  z.object({ type: z.literal('expired'), asOf: z.string() }),
]) satisfies z.ZodType<ErasureScope>;

/** What verification needs once the records are gone; sealed under the request key. */
export const WorksetRecord = z.object({
  id: z.string(),
  kind: MemoryKind,
  subject: z.string(),
  text: z.string(),
  /** The record's most distinctive words, for the BM25 probe. */
  terms: z.array(z.string()),
  /** The stored vector, base64 of its float32 bytes. */
  vector: z.string(),
});
export type WorksetRecord = z.infer<typeof WorksetRecord>;

export const Workset = z.object({
  records: z.array(WorksetRecord),
  /** Stream of each ingested event of the closure. */
  eventStreams: z.record(z.string(), z.string()),
});
export type Workset = z.infer<typeof Workset>;

export const StepRecordSchema = z.object({
  step: z.enum(ERASURE_STEPS),
  startedAt: z.string(),
  finishedAt: z.string(),
  attempts: z.number(),
  counts: z.record(z.string(), z.number()).optional(),
}) satisfies z.ZodType<StepRecord>;

export const AuditAnchor = z.object({ seq: z.number(), hash: z.string() });
export type AuditAnchor = z.infer<typeof AuditAnchor>;

/** Why an erasure ended without a certificate: a failure code, ids only. */
export const ErasureAbandonment = z.object({ outcome: z.string(), at: z.string() });
export type ErasureAbandonment = z.infer<typeof ErasureAbandonment>;

export const ERASURE_EVENT_TYPES = {
  requested: 'ErasureRequested',
  workset: 'ErasureWorksetCaptured',
  step: 'ErasureStepCompleted',
  auditClosed: 'ErasureAuditClosed',
  certified: 'ErasureCertified',
  abandoned: 'ErasureAbandoned',
  approverNamed: 'ErasureApproverNamed',
} as const;

/** The display name of a member of staff who approves the erasure (kept out of Temporal: the API records it here). */
export const ApproverName = z.object({ sub: z.string(), name: z.string() });
export type ApproverName = z.infer<typeof ApproverName>;

export const ErasureEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ErasureRequested'), data: ErasureRequestRecord.extend({ scope: SealedValue }) }),
  z.object({ type: z.literal('ErasureWorksetCaptured'), data: z.object({ workset: SealedValue }) }),
  z.object({ type: z.literal('ErasureStepCompleted'), data: StepRecordSchema }),
  z.object({ type: z.literal('ErasureAuditClosed'), data: AuditAnchor }),
  z.object({ type: z.literal('ErasureCertified'), data: SignedCertificate }),
  z.object({ type: z.literal('ErasureAbandoned'), data: ErasureAbandonment }),
  z.object({ type: z.literal('ErasureApproverNamed'), data: ApproverName }),
]);
export type ErasureEvent = z.infer<typeof ErasureEvent>;

export type ErasureCommand =
  | { type: 'RequestErasure'; request: ErasureRequestRecord; scope: SealedValue }
  | { type: 'CaptureWorkset'; requestId: string; workset: SealedValue }
  | { type: 'CompleteStep'; requestId: string; record: StepRecord }
  | { type: 'CloseAudit'; requestId: string; anchor: AuditAnchor }
  | { type: 'Certify'; requestId: string; certificate: SignedCertificate }
  | { type: 'Abandon'; requestId: string; abandonment: ErasureAbandonment }
  | { type: 'NameApprover'; requestId: string; approver: ApproverName };

/** An erasure's progress as its stream tells it. The first record of each kind wins: a retry changes nothing. */
export interface ErasureState {
  request: ErasureRequestRecord | null;
  /** The scope, sealed under the request key (unreadable once the key is shredded). */
  sealedScope: SealedValue | null;
  sealedWorkset: SealedValue | null;
  /** Finished steps in the order they were recorded. */
  steps: readonly StepRecord[];
  auditAnchor: AuditAnchor | null;
  certificate: SignedCertificate | null;
  abandonment: ErasureAbandonment | null;
  /** Display names of the staff who approved (or tried to), by their token's subject; the last one recorded wins. */
  approverNames: Readonly<Record<string, string>>;
}

export const initialErasureState = (): ErasureState => ({
  request: null,
  sealedScope: null,
  sealedWorkset: null,
  steps: [],
  auditAnchor: null,
  certificate: null,
  abandonment: null,
  approverNames: {},
});

/** The finished steps by name. */
export function erasureSteps(state: ErasureState): Map<ErasureStep, StepRecord> {
  return new Map(state.steps.map((record) => [record.step, record]));
}

/**
 * Every command is idempotent: it records its fact once (a request, a
 * workset, a step, an anchor, a certificate, an abandonment) and a repeat
 * decides nothing. Anything but the request itself needs a stored request.
 */
export function decideErasure(command: ErasureCommand, state: ErasureState): ErasureEvent[] {
  if (command.type === 'RequestErasure') {
    if (state.request) return [];
    return [{ type: 'ErasureRequested', data: { ...command.request, scope: command.scope } }];
  }
  if (!state.request) throw new ErasureNotFound(command.requestId);
  switch (command.type) {
    case 'CaptureWorkset':
      return state.sealedWorkset ? [] : [{ type: 'ErasureWorksetCaptured', data: { workset: command.workset } }];
    case 'CompleteStep':
      return state.steps.some((s) => s.step === command.record.step) ? [] : [{ type: 'ErasureStepCompleted', data: command.record }];
    case 'CloseAudit':
      return state.auditAnchor ? [] : [{ type: 'ErasureAuditClosed', data: command.anchor }];
    case 'Certify':
      return state.certificate ? [] : [{ type: 'ErasureCertified', data: command.certificate }];
    case 'Abandon':
      return state.abandonment ? [] : [{ type: 'ErasureAbandoned', data: command.abandonment }];
    case 'NameApprover':
      // Only while the certificate is not written (it is what the name is for), and once per name.
      return state.certificate || state.approverNames[command.approver.sub] === command.approver.name
        ? []
        : [{ type: 'ErasureApproverNamed', data: command.approver }];
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

export function evolveErasure(state: ErasureState, event: ErasureEvent): ErasureState {
  switch (event.type) {
    case 'ErasureRequested': {
      if (state.request) return state;
      const { scope, ...request } = event.data;
      return { ...state, request, sealedScope: scope };
    }
    case 'ErasureWorksetCaptured':
      return state.sealedWorkset ? state : { ...state, sealedWorkset: event.data.workset };
    case 'ErasureStepCompleted':
      return state.steps.some((s) => s.step === event.data.step) ? state : { ...state, steps: [...state.steps, event.data] };
    case 'ErasureAuditClosed':
      return state.auditAnchor ? state : { ...state, auditAnchor: event.data };
    case 'ErasureCertified':
      return state.certificate ? state : { ...state, certificate: event.data };
    case 'ErasureAbandoned':
      return state.abandonment ? state : { ...state, abandonment: event.data };
    case 'ErasureApproverNamed':
      return { ...state, approverNames: { ...state.approverNames, [event.data.sub]: event.data.name } };
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
}

export const erasureDecider: Decider<ErasureCommand, ErasureEvent, ErasureState> = {
  initialState: initialErasureState,
  evolve: evolveErasure,
  decide: decideErasure,
  parse: eventParser(ErasureEvent, Object.values(ERASURE_EVENT_TYPES)),
};
