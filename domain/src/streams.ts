/**
 * Stream names are `category-tenant-id` so that EventStoreDB's `$ce-category`
 * projections work. Tenant ids contain no dash, so the first two dashes split
 * the name unambiguously.
 */

/**
 * A data subject's pseudonym: random, kept in the key vault, destroyed when the
 * subject is erased. Streams, holds and certificates name subjects by it only.
 */
export const SUBJECT_PSEUDONYM_PREFIX = 'psn_';
export const SUBJECT_PSEUDONYM = /^psn_[0-9a-f]{32}$/;

/** True for an `events-*` stream named by a subject's id, as data folders made before pseudonyms have them. */
export function isLegacySubjectStream(stream: string): boolean {
  const parsed = parseStreamName(stream);
  return parsed?.category === 'events' && !SUBJECT_PSEUDONYM.test(parsed.id);
}
export const streams = {
  /** A subject's ingested events, named by the subject's pseudonym (never the subject's id: names outlive erasure). */
  events: (tenant: string, subjectPseudonym: string) => `events-${tenant}-${subjectPseudonym}`,
  memory: (tenant: string, memoryId: string) => `memory-${tenant}-${memoryId}`,
  erasure: (tenant: string, requestId: string) => `erasure-${tenant}-${requestId}`,
  /** One subject-access request: its status and its export, sealed under the request's own key. */
  subjectAccess: (tenant: string, requestId: string) => `subjectaccess-${tenant}-${requestId}`,
  subjectAccessOfTenant: (tenant: string) => `subjectaccess-${tenant}-`,
  /** Re-derivation tombstones of a tenant (keyed fingerprints of erased content). */
  tombstones: (tenant: string) => `tombstone-${tenant}`,
  /** The claim on one event id (a keyed MAC of an idempotency key): who first wrote under that key. */
  idempotency: (tenant: string, eventId: string) => `idempotency-${tenant}-${eventId}`,
  eventsOfTenant: (tenant: string) => `events-${tenant}-`,
  memoriesOfTenant: (tenant: string) => `memory-${tenant}-`,
  /** The tenant's hash-chained audit log. */
  audit: (tenant: string) => `audit-${tenant}`,
  /** The tenant's review flags (ids, counts and rules only) and the trust tier each source system was last seen with. */
  reviews: (tenant: string) => `reviews-${tenant}`,
  /** The tenant's policy versions. */
  policy: (tenant: string) => `policy-${tenant}`,
  /** The tenant's legal holds, naming subjects by pseudonym. */
  legalHolds: (tenant: string) => `legalholds-${tenant}`,
  /**
   * The erasures whose workflow must still be started. Outside every tenant:
   * `_system` cannot be a tenant id (they start with a letter or digit), so no
   * tenant operation reaches this stream.
   */
  erasureOutbox: 'outbox-_system-erasures',
  /** One off-boarding of a tenant (kept after the tenant's own streams are deleted: it is the platform's record). */
  offboarding: (tenant: string, requestId: string) => `offboarding-${tenant}-${requestId}`,
  /** Tenants sealed for off-boarding or off-boarded (their names are never used again). Outside every tenant, like the outbox. */
  tenantClosures: 'tenants-_system-closed',
  /**
   * The data's witness of the erasure ledger it was written beside: the ledger's signed head after each entry
   * (ids, counts and hashes only). Restored with the data, it tells a start which ledger, and how much of it, the
   * data has seen (docs/adr/0017).
   */
  ledgerWitness: 'ledger-_system-witness',
  /** Marks, in a log that cannot record a layout version of its own (EventStoreDB), a finished data-folder migration. */
  migrations: 'migrations-elma',
  /** Category prefixes, for reads and subscriptions over every stream of a category. */
  categories: {
    events: 'events-',
    memory: 'memory-',
    erasure: 'erasure-',
    /** Where holds were kept while they named subjects in clear (migrated to `legalHolds` when a data folder is opened). */
    legacyLegalHolds: 'legalhold-',
  },
} as const;

export function parseStreamName(stream: string): { category: string; tenant: string; id: string } | undefined {
  const first = stream.indexOf('-');
  const second = stream.indexOf('-', first + 1);
  if (first <= 0 || second <= first + 1) return undefined;
  return { category: stream.slice(0, first), tenant: stream.slice(first + 1, second), id: stream.slice(second + 1) };
}
