import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ErasureProgress, ErasureReason } from '@elma/domain';

/** The workflow id of an erasure, `erasure-<tenant>-<requestId>`: one workflow per request, whoever starts it (API, retention sweep). */
export function erasureWorkflowId(tenant: string, requestId: string): string {
  return `erasure-${tenant}-${requestId}`;
}

export interface ErasureInput {
  tenant: string;
  requestId: string;
  reason: ErasureReason;
}

export interface ErasureResult {
  requestId: string;
  /** Records erased (the closure less its legal-hold exceptions). */
  erased: number;
  blockedByLegalHold: number;
  /** The certificate's signing key and signature (the certificate itself is in the erasure stream). */
  keyId: string;
  signature: string;
}

/** Live progress: current step, finished steps with time and attempts, closure size. Ids and counts only. */
export const erasureProgressQuery = defineQuery<ErasureProgress>('erasureProgress');

/** A DPO's approval of a large closure; the API checks the role before sending it. */
export const approveErasureSignal = defineSignal<[{ approvedBy: string }]>('approveErasure');

/** Failure types the workflow ends with (besides the domain codes of its activities). */
export const ERASURE_FAILURES = {
  invalidInput: 'ERASURE.INVALID_INPUT',
  approvalTimeout: 'ERASURE.APPROVAL_TIMEOUT',
  verificationFailed: 'ERASURE.VERIFICATION_FAILED',
} as const;

/** Erasure request ids as the API makes them (`era_<uuid>`) or the retention sweep does (`ret_...`). */
export const ERASURE_REQUEST_ID_PATTERN = /^(era|ret)_[A-Za-z0-9_-]{1,100}$/;

/** Purge, then verify; after a failed verification the purge runs again, this many rounds in all. */
export const VERIFICATION_ROUNDS = 3;

export interface RetentionSweepInput {
  /** Only these tenants (default: every tenant with records). */
  tenants?: string[];
}

export interface RetentionSweepResult {
  asOf: string;
  /** One erasure (and certificate) per tenant that had expired records. */
  erasures: { tenant: string; requestId: string; erased: number | null; failed?: boolean }[];
  /** Unfinished erasures whose workset was shredded for having outlived the retention window. */
  worksetsExpired?: number;
}

/** Progress before the first step has run. */
export const initialErasureProgress = (requestId: string, tenant: string, reason: ErasureReason): ErasureProgress => ({
  requestId,
  tenant,
  reason,
  status: 'running',
  currentStep: null,
  steps: [],
  closureSize: null,
  blockedByLegalHold: [],
  certificateAvailable: false,
});
