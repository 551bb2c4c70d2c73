/** The workflow id of an off-boarding, `offboard-<tenant>-<requestId>`: one workflow per approved request. */
export function offboardWorkflowId(tenant: string, requestId: string): string {
  return `offboard-${tenant}-${requestId}`;
}

export interface OffboardInput {
  tenant: string;
  requestId: string;
}

export interface OffboardResult {
  requestId: string;
  /** The certificate's signing key and signature (the certificate itself is in the off-boarding stream). */
  keyId: string;
  signature: string;
}

export const OFFBOARD_FAILURES = {
  invalidInput: 'OFFBOARD.INVALID_INPUT',
  verificationFailed: 'OFFBOARD.VERIFICATION_FAILED',
} as const;

/** Off-boarding request ids as the API makes them. */
export const OFFBOARD_REQUEST_ID_PATTERN = /^off_[0-9a-f-]{36}$/;

/** Drop and delete, then verify; after a failed verification they run again, this many rounds in all. */
export const OFFBOARD_VERIFICATION_ROUNDS = 2;

/**
 * How long the workflow waits after sealing before it reads anything: every API process re-reads the closed
 * tenants at least once a second (TenantClosures), so a write that passed its check just before the seal has
 * landed, and none passes after.
 */
export const SEAL_SETTLE = '3 seconds';
