import { z } from 'zod';
import { DomainError } from '../shared/errors';
import { PageQuery } from '../shared/paging';

/**
 * Erasure (docs/architecture.md#erasure; paper, sections 5.4 'Forgetting and deletion' and 6.2 'Completeness of the deletion closure'). An erasure request names a scope;
 * the workflow locates the records in it, computes their deletion closure
 * over lineage, and purges, shreds, deletes, tombstones and verifies every
 * record of the closure before it signs a certificate.
 */

export const ErasureReason = z.enum(['subject_request', 'retention', 'correction', 'legal']);
export type ErasureReason = z.infer<typeof ErasureReason>;

const IsoDate = z.iso.datetime({ offset: true });
const RecordId = z.string().min(1).max(200);
const Hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'a 64-character lowercase hex fingerprint');

/**
 * What a caller may ask to erase. `content` carries the text to look for: it
 * is turned into a keyed fingerprint when the request is accepted and never
 * stored or passed on. `fingerprint` is such a fingerprint, as ELMA reports it
 * (certificates list one per erased record).
 */
export const ErasureScopeInput = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('records'), recordIds: z.array(RecordId).min(1).max(10_000) }),
  z.strictObject({ type: z.literal('subject'), subject: z.string().min(1).max(200) }),
  z
    .strictObject({ type: z.literal('time_range'), from: IsoDate, to: IsoDate, subject: z.string().min(1).max(200).optional() })
    .refine((s) => Date.parse(s.from) < Date.parse(s.to), { message: '`from` must be before `to`', path: ['to'] }),
  z.strictObject({ type: z.literal('content'), text: z.string().min(1).max(100_000) }),
  z.strictObject({ type: z.literal('fingerprint'), fingerprint: Hex64 }),
]);
export type ErasureScopeInput = z.infer<typeof ErasureScopeInput>;

/**
 * The scope as stored (sealed) in the erasure stream: content is already a
 * fingerprint, and the retention sweep adds `expired` (records whose
 * retention ended at `asOf`).
 */
export type ErasureScope =
  | { type: 'records'; recordIds: string[] }
  | { type: 'subject'; subject: string }
  | { type: 'time_range'; from: string; to: string; subject?: string }
  | { type: 'fingerprint'; fingerprint: string }
  | { type: 'expired'; asOf: string };

/** `POST /v1/erasures`. */
export const CreateErasureRequest = z.strictObject({
  scope: ErasureScopeInput,
  reason: ErasureReason,
});
export type CreateErasureRequest = z.infer<typeof CreateErasureRequest>;

/** The steps of `ErasureWorkflow`, in order (docs/architecture.md#erasure). */
export const ERASURE_STEPS = [
  'authorize',
  'locate',
  'closure',
  'legal_hold',
  'approval',
  'purge_index',
  'purge_caches',
  'shred_keys',
  'delete_streams',
  'tombstones',
  'verify',
  'certify',
] as const;
export type ErasureStep = (typeof ERASURE_STEPS)[number];

export const ErasureStatus = z.enum([
  'running',
  'awaiting_approval',
  'completed',
  'denied',
  'approval_timed_out',
  'verification_failed',
  'failed',
]);
export type ErasureStatus = z.infer<typeof ErasureStatus>;

/** One finished step, as progress and the certificate show it. */
export interface StepRecord {
  step: ErasureStep;
  startedAt: string;
  finishedAt: string;
  /** Attempts the step's activity took (1 when it succeeded at once; 0 for a step with no activity). */
  attempts: number;
  /** Counts only: no ids of people, no content. */
  counts?: Record<string, number>;
}

/** Live progress of one erasure (the workflow's query: ids and counts only; the API adds the approver's display name). */
export interface ErasureProgress {
  requestId: string;
  tenant: string;
  reason: ErasureReason;
  status: ErasureStatus;
  currentStep: ErasureStep | null;
  steps: StepRecord[];
  closureSize: number | null;
  /** Records of the closure kept because a legal hold covers them (restricted, not erased). */
  blockedByLegalHold: string[];
  /** Set while awaiting approval. */
  approvalDeadline?: string;
  approvedBy?: string;
  /**
   * The approver's display name (token claim `name`), kept in the erasure stream when they approved: staff only,
   * never a data subject. Absent when their token had none.
   */
  approvedByName?: string;
  /** Why it stopped, when it did not complete (a stable code). */
  failure?: { code: string; message: string };
  certificateAvailable: boolean;
}

/** `GET /v1/erasures`: the tenant's erasures the caller may follow, in the order they were requested, by status. */
export const ErasureListQuery = PageQuery.extend({ status: ErasureStatus.optional() });
export type ErasureListQuery = z.infer<typeof ErasureListQuery>;

/** Where an erasure listing is: after the request recorded at this event-log position (a decimal string). */
export const ErasureListPosition = z.strictObject({ position: z.string().regex(/^[0-9]{1,20}$/) });
export type ErasureListPosition = z.infer<typeof ErasureListPosition>;

export class ErasureNotFound extends DomainError {
  constructor(id: string) {
    super('ERASURE.NOT_FOUND', `erasure request ${id} not found`, { requestId: id });
  }
}

/** The content matches a tombstone: it was erased and may not be stored again for this subject. */
export class ContentErased extends DomainError {
  constructor(path: string) {
    super('ERASURE.CONTENT_ERASED', `content at ${path || '(root)'} matches erased content and cannot be stored again`, { path });
  }
}

export class ErasureNotAwaitingApproval extends DomainError {
  constructor(id: string) {
    super('ERASURE.NOT_AWAITING_APPROVAL', `erasure request ${id} is not awaiting approval`, { requestId: id });
  }
}

export class ErasureSelfApproval extends DomainError {
  constructor() {
    super('ERASURE.SELF_APPROVAL', 'an erasure must be approved by someone other than its requester');
  }
}

export class CertificateNotReady extends DomainError {
  constructor(id: string) {
    super('ERASURE.CERTIFICATE_NOT_READY', `erasure request ${id} has no certificate (yet)`, { requestId: id });
  }
}

/**
 * Text normalised before fingerprinting, so that trivial variants of the same
 * content (case, width, spacing) match one tombstone.
 */
export function normalizeForFingerprint(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim();
}
