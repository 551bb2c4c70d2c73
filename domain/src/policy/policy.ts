import { z } from 'zod';
import type { Principal } from '../auth/principal';
import { ROLES } from '../auth/roles';
import { MemoryKind, MemoryStatus, RetentionClass, Sensitivity, type MemoryRecord } from '../memory/record';
import { isSharedOwnership } from '../memory/lineage';
import { Quotas } from '../quota/quota';

export const Operation = z.enum(['read', 'write', 'export', 'erase', 'administer']);
export type Operation = z.infer<typeof Operation>;

/** The rule id every decision names when no rule allowed it. Reserved: no policy rule may use it. */
export const DEFAULT_DENY = 'default-deny';

const Name = z.string().min(1).max(200);

/**
 * What must hold for a rule to allow. Every field present must hold (AND); a
 * list means "one of". An empty list can never hold, so it disables the rule
 * rather than widening it.
 */
export const Condition = z.strictObject({
  /** The subject has at least one of these roles. */
  roles: z.array(Name).max(100).optional(),
  /** The declared purpose of the call is one of these. */
  purposes: z.array(Name).max(100).optional(),
  /** The call came through one of these channels. */
  channels: z.array(Name).max(100).optional(),
  kinds: z.array(MemoryKind).optional(),
  /** Highest record sensitivity the rule admits (inclusive); absent: up to `restricted`. */
  maxSensitivity: Sensitivity.optional(),
  /** The record's owner is the subject. */
  ownerIsSubject: z.boolean().optional(),
  /** The record's project is the subject's project; a subject without a project never matches. */
  sameProject: z.boolean().optional(),
  statuses: z.array(MemoryStatus).optional(),
  retentionClasses: z.array(RetentionClass).optional(),
  /**
   * Purpose limitation is the default: unless this is true, the record's
   * purposes must include the call's purpose, and a call without a purpose
   * never matches. Rules for operations that have no record (administer) must
   * set it.
   */
  crossPurpose: z.boolean().optional(),
});
export type Condition = z.infer<typeof Condition>;

/** An allow rule. There are no deny rules: whatever no rule allows is denied. */
export const PolicyRule = z.strictObject({
  id: z
    .string()
    .min(1)
    .max(100)
    .refine((id) => id !== DEFAULT_DENY, { message: `"${DEFAULT_DENY}" is reserved for the implicit deny` }),
  description: z.string().max(1000).optional(),
  operations: z.array(Operation).min(1),
  when: Condition.default({}),
});
export type PolicyRule = z.infer<typeof PolicyRule>;

const Rules = z
  .array(PolicyRule)
  .max(500)
  .superRefine((rules, ctx) => {
    const seen = new Set<string>();
    rules.forEach((rule, i) => {
      if (seen.has(rule.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: 'duplicate rule id' });
      seen.add(rule.id);
    });
  });

/**
 * Bounds of the policy's numbers. Each is applied to dates or sizes (an
 * expiry is `recordedAt + days`, a closure is compared to the threshold), so
 * a value outside them would make every write of the tenant fail instead of
 * the policy change: 100 years of retention keeps every expiry a valid date.
 */
export const POLICY_BOUNDS = {
  retentionDays: { max: 36_500 },
  approvalThreshold: { max: 1_000_000 },
  approvalTimeoutHours: { max: 24 * 90 },
} as const;

/** Days; fractions are allowed (0.5 is twelve hours), so short retention can be tested and used. */
const Days = z.number().positive().max(POLICY_BOUNDS.retentionDays.max);

/**
 * When writes look like a burst (review flags of kind `write_burst`): more than `maxEventsPerSource` events from
 * one source system, or more than `maxFactsPerKey` facts about one entity and attribute, within `windowMinutes`
 * of transaction time. The defaults sit well above a busy chat session (a few events a minute, a fact restated
 * now and then) and below a script that writes the same fact over and over.
 */
export const ReviewThresholds = z.strictObject({
  windowMinutes: z
    .number()
    .positive()
    .max(24 * 60)
    .default(10),
  maxEventsPerSource: z.number().int().min(1).max(1_000_000).default(300),
  maxFactsPerKey: z.number().int().min(1).max(100_000).default(5),
});
export type ReviewThresholds = z.infer<typeof ReviewThresholds>;
export const DEFAULT_REVIEW_THRESHOLDS: ReviewThresholds = ReviewThresholds.parse({});

export const TenantPolicy = z.strictObject({
  version: z
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER - 1),
  /** Evaluated in order; the first rule that matches allows and names the decision. */
  rules: Rules,
  /** What ingest does with detected secrets: refuse the write, or store it with the secret redacted. */
  secrets: z.strictObject({ mode: z.enum(['reject', 'redact']).default('reject') }).default({ mode: 'reject' }),
  retentionDays: z
    .strictObject({ session: Days.default(1), standard: Days.default(365), long_term: Days.default(3650) })
    .default({ session: 1, standard: 365, long_term: 3650 }),
  /**
   * Erasure: closures larger than `approvalThreshold` records wait for a DPO's approval, at most `approvalTimeoutHours`.
   * `tombstoneScope`: erased content is refused again for the same subject only (`subject`), or for every subject
   * of the tenant (`tenant`). `worksetRetentionDays`: how long an erasure that never finished keeps its sealed
   * workset (texts and vectors for verification) before its key is shredded.
   */
  erasure: z
    .strictObject({
      approvalThreshold: z.number().int().min(0).max(POLICY_BOUNDS.approvalThreshold.max).default(100),
      approvalTimeoutHours: z.number().positive().max(POLICY_BOUNDS.approvalTimeoutHours.max).default(168),
      tombstoneScope: z.enum(['subject', 'tenant']).default('subject'),
      worksetRetentionDays: z.number().int().min(1).max(365).default(30),
    })
    .default({ approvalThreshold: 100, approvalTimeoutHours: 168, tombstoneScope: 'subject', worksetRetentionDays: 30 }),
  /**
   * Subject access (GDPR Art. 15/20): with `selfService`, a data subject may request the export of their own
   * data (`POST /v1/subject-access` naming themself); otherwise only the subject-access roles may. Off by default.
   */
  subjectAccess: z.strictObject({ selfService: z.boolean().default(false) }).default({ selfService: false }),
  /** Sources whose facts are trusted as authoritative. */
  authoritativeSources: z.array(Name).max(1000).default([]),
  /** Words that raise a memory's sensitivity at ingest. */
  sensitivityKeywords: z
    .strictObject({ confidential: z.array(Name).max(1000).default([]), restricted: z.array(Name).max(1000).default([]) })
    .default({ confidential: [], restricted: [] }),
  /** Thresholds of the write-rate review flags (see `ReviewThresholds`); unset: the defaults. */
  reviews: ReviewThresholds.default(DEFAULT_REVIEW_THRESHOLDS),
  /** Per-tenant limits (ingest and recall rates, stored memories and bytes, concurrent requests); unset: the platform's defaults. */
  quotas: Quotas.optional(),
});
export type TenantPolicy = z.infer<typeof TenantPolicy>;

/**
 * A policy as stored in the log. Policies written before the bounds existed
 * may hold a number above them; it is read capped at the bound, so the
 * tenant keeps working (and an admin's next PUT replaces it), rather than
 * every request of the tenant failing on a policy that no longer parses.
 */
export function storedPolicy(data: unknown): TenantPolicy {
  const cap = (value: unknown, max: number) => (typeof value === 'number' ? Math.min(max, value) : value);
  const raw = structuredClone(data) as { retentionDays?: Record<string, unknown>; erasure?: Record<string, unknown> } | null;
  const { retentionDays, approvalThreshold } = POLICY_BOUNDS;
  if (raw?.retentionDays && typeof raw.retentionDays === 'object') {
    for (const key of Object.keys(raw.retentionDays)) raw.retentionDays[key] = cap(raw.retentionDays[key], retentionDays.max);
  }
  if (raw?.erasure && typeof raw.erasure === 'object') {
    raw.erasure.approvalThreshold = cap(raw.erasure.approvalThreshold, approvalThreshold.max);
  }
  return TenantPolicy.parse(raw);
}

/** The body of a policy PUT: the version is assigned by the store, never by the caller. */
export const PolicyDocument = TenantPolicy.omit({ version: true });
export type PolicyDocument = z.infer<typeof PolicyDocument>;

const RECALLABLE: MemoryStatus[] = ['active', 'disputed'];

/**
 * The policy a tenant has until it sets its own. Reads are purpose-bound and
 * see recallable records only. Writers (agents, services, admins) may record
 * what they observe at any sensitivity: ingest classification raises a record
 * to restricted when it finds a card number or password in a customer's
 * message, and refusing that write would lose the event rather than protect
 * it; who may *read* it is what the read rules restrict. Tenant-level
 * operations (administer, export, erase) have no record to bind a purpose to,
 * hence `crossPurpose`.
 */
export const DEFAULT_POLICY: TenantPolicy = TenantPolicy.parse({
  version: 1,
  rules: [
    {
      id: 'read-up-to-confidential',
      description: 'Anyone may recall active or disputed records up to confidential, for a purpose the record was collected for.',
      operations: ['read'],
      when: { statuses: RECALLABLE, maxSensitivity: 'confidential' },
    },
    {
      id: 'read-restricted-own',
      description: 'The owner of a restricted record may recall it, for a purpose it was collected for.',
      operations: ['read'],
      when: { statuses: RECALLABLE, ownerIsSubject: true },
    },
    {
      id: 'read-restricted-privacy',
      description: 'The DPO and legal may recall restricted records, for a purpose they were collected for.',
      operations: ['read'],
      when: { statuses: RECALLABLE, roles: ROLES.restrictedReaders },
    },
    {
      id: 'write-by-writers',
      description: 'Agents, services and admins may record what they observe, at any sensitivity.',
      operations: ['write'],
      when: { roles: ROLES.writers, crossPurpose: true },
    },
    { id: 'administer-admin', operations: ['administer'], when: { roles: [ROLES.administer], crossPurpose: true } },
    { id: 'export-auditor', operations: ['export'], when: { roles: [ROLES.audit], crossPurpose: true } },
    { id: 'erase-privacy', operations: ['erase'], when: { roles: ROLES.erasure, crossPurpose: true } },
  ],
});

/** Who asks. */
export interface PolicySubject {
  user: string;
  roles: string[];
  department?: string;
  project?: string;
  /** Highest sensitivity the subject may ever read, whatever the rules say. */
  clearance: Sensitivity;
}

/** The record an operation touches, reduced to the attributes rules may test. */
export interface PolicyResource {
  kind: MemoryKind;
  sensitivity: Sensitivity;
  owner: string;
  /** True when the record derives from records of other owners too (`isSharedOwnership`). */
  sharedOwnership?: boolean;
  project?: string;
  status: MemoryStatus;
  retentionClass: RetentionClass;
  purposes: string[];
}

/** The circumstances of the call. `now` comes from outside (domain code reads no clock). */
export interface PolicyEnv {
  purpose?: string;
  channel?: string;
  now: string;
}

export function resourceOf(record: MemoryRecord): PolicyResource {
  const resource: PolicyResource = {
    kind: record.kind,
    sensitivity: record.policy.sensitivity,
    owner: record.policy.owner,
    status: record.status,
    retentionClass: record.retention.class,
    purposes: record.policy.purposes,
  };
  if (record.policy.project !== undefined) resource.project = record.policy.project;
  if (isSharedOwnership(record)) resource.sharedOwnership = true;
  return resource;
}

export function subjectOf(principal: Pick<Principal, 'sub' | 'roles' | 'clearance' | 'department' | 'project'>): PolicySubject {
  const subject: PolicySubject = { user: principal.sub, roles: principal.roles, clearance: principal.clearance };
  if (principal.department !== undefined) subject.department = principal.department;
  if (principal.project !== undefined) subject.project = principal.project;
  return subject;
}
