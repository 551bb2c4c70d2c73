import type { BuiltInRole } from './principal';

/**
 * What each built-in role is for, named once: the services' role gates and
 * the default policy's rules read them from here. Together they name exactly
 * `BUILT_IN_ROLES` (a spec holds the two equal).
 */
export const ROLES = {
  /** May record what they observe (the default policy's write rule). */
  writers: ['agent', 'admin', 'service'],
  /** May recall restricted records, for a purpose they were collected for (the default policy). */
  restrictedReaders: ['dpo', 'legal'],
  /** Tenant policy. */
  administer: 'admin',
  /** Legal holds; reads and writes past a hold. */
  legal: 'legal',
  /** Exports and verifies the audit log. */
  audit: 'auditor',
  /** Settle a contradicted fact. */
  corrector: ['admin', 'dpo', 'reviewer'],
  /** See the review flags (writes that look like poisoning). */
  reviewReaders: ['reviewer', 'admin', 'compliance', 'auditor'],
  /** Confirm or dismiss a review flag. */
  reviewResolvers: ['reviewer', 'admin'],
  /** Request an erasure of any data subject (a subject may request their own). */
  erasure: ['compliance', 'dpo'],
  /** Read any erasure of the tenant, besides its requester. */
  erasureReader: ['compliance', 'dpo', 'auditor'],
  /** Approves a closure above the tenant's threshold (four eyes: not the requester). */
  erasureApprover: 'dpo',
  /**
   * Off-boards a tenant (request, and approval by a second platform admin). Counts only in a token bound to
   * `PLATFORM_TENANT`: not a tenant role, it acts on the tenant named in the path.
   */
  platform: 'platform-admin',
  /** Request and read the subject-access export of any data subject (GDPR Art. 15/20); a subject may ask for themself when the policy allows. */
  subjectAccess: ['dpo', 'compliance'],
  /** Rotates the caller's own tenant key and revokes its tenant's tokens (master and signing keys: the operator's CLI). */
  keys: 'admin',
} as const satisfies Record<string, BuiltInRole | readonly BuiltInRole[]>;
