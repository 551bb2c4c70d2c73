import type {
  Adjudication,
  GovernanceService,
  IngestService,
  KeyService,
  MemoryService,
  RecallService,
  ReviewFlags,
} from '@elma/application';
import type { TokenVerifier } from '@elma/infra';
import type { EngineHealth } from '@elma/runtime';

/*
 * One injection token per service a controller, resolver or guard uses; each
 * is bound in app.ts to the process's instance, and a class injects only the
 * ones it calls.
 */

/** Appends events (REST /v1/events, GraphQL ingestEvents). */
export const INGEST = Symbol('INGEST');
export type Ingest = Pick<IngestService, 'ingest'>;

/** Writes, reads, lists and promotes memories. */
export const MEMORIES = Symbol('MEMORIES');
export type Memories = Pick<MemoryService, 'write' | 'get' | 'promote' | 'list' | 'versions'>;

/** Settles a contradicted fact. */
export const ADJUDICATION = Symbol('ADJUDICATION');
export type Adjudicator = Pick<Adjudication, 'adjudicate'>;

/** Recall and its feedback. */
export const RECALL = Symbol('RECALL');
export type Recall = Pick<RecallService, 'recall' | 'feedback'>;

/** Policy, legal holds and the audit log. */
export const GOVERNANCE = Symbol('GOVERNANCE');
export type Governance = Pick<
  GovernanceService,
  'getPolicy' | 'putPolicy' | 'placeHold' | 'releaseHold' | 'listHolds' | 'exportAudit' | 'verifyAudit'
>;

/** Each engine of the process and whether it is up. */
export const HEALTH = Symbol('HEALTH');
export interface HealthCheck {
  health(): Promise<Record<string, EngineHealth>>;
}

/** Verifies bearer tokens; built once per API (it caches the identity provider's keys). */
export const TOKEN_VERIFIER = Symbol('TOKEN_VERIFIER');
export type BearerVerifier = Pick<TokenVerifier, 'verify'>;

/** Injection token for the erasure desk (the erasure service plus the Temporal side of erasure). */
export const ERASURE_DESK = Symbol('ERASURE_DESK');

/** Injection token for the off-boarding desk (platform admins: requests, approvals, certificates). */
export const OFFBOARDING_DESK = Symbol('OFFBOARDING_DESK');

/** The tenants closed by off-boarding: every request of their tokens is refused (TENANT.OFFBOARDED). */
export const TENANT_CLOSURES = Symbol('TENANT_CLOSURES');
export interface ClosedTenants {
  closure(tenant: string): Promise<'sealed' | 'offboarded' | undefined>;
}
/** Injection token for the subject-access desk (the service plus the Temporal side of subject access). */
export const SUBJECT_ACCESS_DESK = Symbol('SUBJECT_ACCESS_DESK');
/** Token revocation and tenant key rotation. */
export const KEYS = Symbol('KEYS');
export type Keys = Pick<KeyService, 'revokeToken' | 'rotateTenantKey' | 'rotationStatus'>;
/** Review flags: listed and resolved by the review roles. */
export const REVIEWS = Symbol('REVIEWS');
export type Reviews = Pick<ReviewFlags, 'list' | 'resolve'>;
/** Verifies uploaded certificates against this ELMA's signing keys (POST /v1/certificates/verify). */
export const CERTIFICATE_DESK = Symbol('CERTIFICATE_DESK');
/** Sign-in through the identity provider (GET /v1/sign-in, POST /v1/sign-in/token). */
export const SIGN_IN_DESK = Symbol('SIGN_IN_DESK');
