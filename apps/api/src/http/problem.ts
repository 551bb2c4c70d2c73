import { DomainError } from '@elma/domain';
import { storageFullOf } from '@elma/shared';

/** HTTP status for each stable error code (`AREA.CODE`). Codes not listed are server errors. */
const STATUS: Record<string, number> = {
  'REQUEST.MALFORMED_JSON': 400,
  'REQUEST.VALIDATION_FAILED': 422,
  'CONSISTENCY.POSITION_NOT_WRITTEN': 422,
  'REQUEST.PAYLOAD_TOO_LARGE': 413,
  'REQUEST.UNSUPPORTED_MEDIA_TYPE': 415,
  'REQUEST.MALFORMED': 400,
  // A listing's query string: part of the address, so a malformed one is a bad request (400) rather than a body that fails its schema (422).
  'REQUEST.INVALID_QUERY': 400,
  'REQUEST.INVALID_CURSOR': 400,
  'REQUEST.TIMEOUT': 408,
  'REQUEST.URI_TOO_LONG': 414,
  'REQUEST.HEADERS_TOO_LARGE': 431,
  'ROUTE.METHOD_NOT_ALLOWED': 405,
  'AUTH.UNAUTHENTICATED': 401,
  'AUTH.TOKEN_INVALID': 401,
  'AUTH.TOKEN_EXPIRED': 401,
  'AUTH.TOKEN_NOT_YET_VALID': 401,
  'AUTH.TOKEN_EXPIRY_REQUIRED': 401,
  'AUTH.TOKEN_LIFETIME_TOO_LONG': 401,
  'AUTH.UNKNOWN_ROLE': 401,
  'AUTH.TOKEN_REVOKED': 401,
  'AUTH.TOKEN_ID_REQUIRED': 401,
  'AUTH.KEYS_UNAVAILABLE': 503,
  'SIGN_IN.NOT_CONFIGURED': 404,
  'SIGN_IN.REFUSED': 400,
  'SIGN_IN.PROVIDER_UNAVAILABLE': 503,
  'RECALL.PURPOSE_NOT_PERMITTED': 403,
  'ROUTE.NOT_FOUND': 404,
  'MEMORY.NOT_FOUND': 404,
  'MEMORY.UNKNOWN_SOURCE_EVENT': 422,
  'MEMORY.ALREADY_RECORDED': 409,
  'EVENT_LOG.WRONG_EXPECTED_VERSION': 409,
  'EVENT_LOG.STREAM_DELETED': 410,
  'KEY_VAULT.KEY_SHREDDED': 410,
  // The key-management server (ELMA_KEY_VAULT=transit) is down, sealed or refusing ELMA's token.
  'KEY_VAULT.KMS_UNAVAILABLE': 503,
  'PROJECTION.LAGGING': 503,
  'INDEX.PARTITION_CORRUPT': 503,
  // The embedded index's thread ended under the request; the next request starts it again.
  'INDEX.UNAVAILABLE': 503,
  'HYGIENE.SECRET_DETECTED': 422,
  'AUTH.TENANT_MISMATCH': 403,
  'AUTH.FORBIDDEN': 403,
  'POLICY.DENIED': 403,
  'POLICY.VERSION_CONFLICT': 409,
  'LEGAL_HOLD.NOT_FOUND': 404,
  'REVIEW.FLAG_NOT_FOUND': 404,
  'REVIEW.FLAG_ALREADY_RESOLVED': 409,
  'ERASURE.NOT_FOUND': 404,
  'MEMORY.NOT_A_FACT': 422,
  'RECALL.NOT_FOUND': 404,
  'MEMORY.PROCEDURE_VERSION_CONFLICT': 409,
  'MEMORY.NOT_PROMOTABLE': 422,
  'ERASURE.NOT_AWAITING_APPROVAL': 409,
  'ERASURE.SELF_APPROVAL': 403,
  'ERASURE.CERTIFICATE_NOT_READY': 409,
  'ERASURE.CONTENT_ERASED': 409,
  // POST /v1/certificates/verify: a file that is no certificate, one this build cannot read, a newer format.
  'CERTIFICATE.UNREADABLE': 422,
  'CERTIFICATE.FORMAT_TOO_NEW': 422,
  'TEMPORAL.UNAVAILABLE': 503,
  'TENANT.OFFBOARDED': 410,
  'OFFBOARD.NOT_FOUND': 404,
  'OFFBOARD.SELF_APPROVAL': 403,
  'OFFBOARD.NOT_AWAITING_APPROVAL': 409,
  'OFFBOARD.BLOCKED_BY_LEGAL_HOLD': 409,
  'OFFBOARD.TENANT_CLOSED': 409,
  'OFFBOARD.PLATFORM_TENANT': 409,
  'OFFBOARD.EXPORT_NOT_CONFIGURED': 409,
  'OFFBOARD.CERTIFICATE_NOT_READY': 409,
  'SUBJECT_ACCESS.NOT_FOUND': 404,
  'SUBJECT_ACCESS.NOT_READY': 409,
  'SUBJECT_ACCESS.EXPORT_GONE': 410,
  // 507, not 503 + Retry-After: space comes back when an operator frees it, so no retry time can be promised,
  // and clients and alerts can tell "the volume is full" from "the server is busy, retry shortly".
  'STORAGE.FULL': 507,
  'SERVER.OVERLOADED': 503,
  // A tenant's rates and requests in progress: 429 (RFC 6585, "too many requests in a given amount of time"), with Retry-After.
  'QUOTA.INGEST_RATE': 429,
  'QUOTA.RECALL_RATE': 429,
  'QUOTA.CONCURRENT_REQUESTS': 429,
  // A tenant's storage quota: 429 as well, without Retry-After (RFC 6585 makes it optional), since room comes back
  // when the tenant erases or an operator raises the quota, not after a time that could be promised. Not 507
  // (WebDAV's quota answer, RFC 4331): a 5xx says the server failed, and this is the tenant's own limit; 507 stays
  // STORAGE.FULL, the volume itself. As Google's RESOURCE_EXHAUSTED (per-user quota) maps to 429.
  'QUOTA.STORED_MEMORIES': 429,
  'QUOTA.STORED_BYTES': 429,
  // More events in one batch than the tenant's burst: it could never pass, so retrying it is pointless; split it.
  'QUOTA.BATCH_EXCEEDS_BURST': 422,
  // A tenant admin may tighten its quotas, not grant itself more than the platform does.
  'QUOTA.RAISE_FORBIDDEN': 403,
};

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  instance?: string;
  requestId?: string;
  errors?: unknown;
}

/**
 * Maps any error to RFC 9457 problem details. Only domain errors (whose
 * messages are built from ids and paths, never content) and known framework
 * errors show their detail; anything else is a generic 500 so that no
 * payload fragment can leak through an exception message.
 */
export const STATUS_OF_CODE: Readonly<Record<string, number>> = STATUS;

/** The code of an unexpected error: a fault of the server, never of the request. */
export const INTERNAL = 'SERVER.INTERNAL';

export function toProblem(error: unknown, instance?: string, requestId?: string): Problem {
  const { code, detail, errors } = classify(error);
  const status = STATUS[code] ?? 500;
  return {
    type: `https://elma.dev/problems/${code.toLowerCase().replace(/[._]/g, '-')}`,
    title: code,
    status,
    detail,
    code,
    ...(instance ? { instance } : {}),
    ...(requestId ? { requestId } : {}),
    ...(errors ? { errors } : {}),
  };
}

function classify(error: unknown): { code: string; detail: string; errors?: unknown } {
  // Whichever adapter ran out of space (SQLite, a file write), the caller gets the same code.
  const full = storageFullOf(error);
  if (full) return { code: full.code, detail: full.message };
  if (error instanceof DomainError) {
    const details = error.details as { issues?: unknown; findings?: unknown };
    return { code: error.code, detail: error.message, errors: details.issues ?? details.findings };
  }
  const fastify = error as { code?: string; statusCode?: number };
  switch (fastify?.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'REQUEST.MALFORMED_JSON', detail: 'the request body is not valid JSON' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'REQUEST.PAYLOAD_TOO_LARGE', detail: 'the request body exceeds 1 MiB' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return { code: 'REQUEST.UNSUPPORTED_MEDIA_TYPE', detail: 'send application/json' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { code: 'REQUEST.MALFORMED', detail: 'the Content-Length header does not match the body' };
    case 'FST_ERR_BAD_URL':
      return { code: 'REQUEST.MALFORMED', detail: 'the URL is not validly encoded' };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { code: 'REQUEST.URI_TOO_LONG', detail: 'a path segment is too long' };
  }
  if (error instanceof SyntaxError && fastify?.statusCode === 400) {
    return { code: 'REQUEST.MALFORMED_JSON', detail: 'the request body is not valid JSON' };
  }
  // Nest turns Fastify's own errors (body parsing, routing) into HttpExceptions that keep only the status.
  switch ((error as { getStatus?: () => number })?.getStatus?.()) {
    case 400:
      return { code: 'REQUEST.MALFORMED_JSON', detail: 'the request body is not valid JSON' };
    case 404:
      return { code: 'ROUTE.NOT_FOUND', detail: 'no such route' };
    case 413:
      return { code: 'REQUEST.PAYLOAD_TOO_LARGE', detail: 'the request body exceeds 1 MiB' };
    case 415:
      return { code: 'REQUEST.UNSUPPORTED_MEDIA_TYPE', detail: 'send application/json' };
  }
  return { code: INTERNAL, detail: 'internal error; see the server log with the request id' };
}
