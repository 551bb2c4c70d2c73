import type { ProducedSummary } from '@elma/domain';

/** The workflow id of a subject-access request, `subject-access-<tenant>-<requestId>`: one workflow per request. */
export function subjectAccessWorkflowId(tenant: string, requestId: string): string {
  return `subject-access-${tenant}-${requestId}`;
}

/** The subject is named by pseudonym only: workflow histories and visibility outlive an erasure. */
export interface SubjectAccessInput {
  tenant: string;
  requestId: string;
  subjectPseudonym: string;
}

/** Counts and hashes of the export, never its content. */
export interface SubjectAccessResult extends ProducedSummary {
  requestId: string;
  /** Whether the workflow deleted the export at its expiry (false: an erasure had deleted it already). */
  expiredByWorkflow: boolean;
}

export const SUBJECT_ACCESS_FAILURES = { invalidInput: 'SUBJECT_ACCESS.INVALID_INPUT' } as const;

export const SUBJECT_ACCESS_REQUEST_ID_PATTERN = /^sar_[A-Za-z0-9_-]{1,100}$/;
export const SUBJECT_PSEUDONYM_PATTERN = /^psn_[0-9a-f]{32}$/;
