import { z } from 'zod';
import { TENANT_ID_RULE } from '../auth/principal';
import { DomainError } from '../shared/errors';

/**
 * Tenant off-boarding (docs/architecture.md#tenant-off-boarding): a platform
 * admin asks, a second platform admin approves (four eyes), then
 * `offboardWorkflow` seals the tenant (every request of its tokens refused),
 * exports it when asked, destroys its key, drops its index, deletes its
 * streams, verifies and signs a certificate. The tenant's name stays
 * tombstoned for good, so it can never be re-created over the old data.
 */

/** Why a tenant leaves: a closed list, so no free text (which could carry a person's name) is stored or signed. */
export const OffboardReason = z.enum(['contract_ended', 'customer_request', 'legal_requirement', 'platform_decision']);
export type OffboardReason = z.infer<typeof OffboardReason>;

/** Body of `POST /v1/tenants/{id}/offboard`. */
export const CreateOffboardRequest = z.strictObject({
  reason: OffboardReason,
  /** Write a JSON archive of the tenant's records, policy and audit trail before it is destroyed (ELMA_OFFBOARD_EXPORT_DIR). */
  export: z.boolean().default(false),
});
export type CreateOffboardRequest = z.infer<typeof CreateOffboardRequest>;

/** Off-boarding request ids as the API makes them. */
export const OFFBOARD_REQUEST_ID = /^off_[0-9a-f-]{36}$/;

/** The steps of `offboardWorkflow`, in order. */
export const OFFBOARD_STEPS = ['seal', 'legal_hold', 'export', 'destroy_key', 'drop_index', 'delete_streams', 'verify', 'certify'] as const;
export type OffboardStep = z.infer<typeof OffboardStepSchema>;
export const OffboardStepSchema = z.enum(OFFBOARD_STEPS);

/** Counts only: they go into the workflow history and the certificate. */
export const StepCounts = z.record(z.string(), z.number().int().min(0));

export const OffboardStatus = z.enum(['awaiting_approval', 'running', 'completed', 'failed', 'blocked_by_legal_hold']);
export type OffboardStatus = z.infer<typeof OffboardStatus>;

const IsoDate = z.iso.datetime({ offset: true });
const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);

/** What the export step wrote (absent without export): the archive's name in the export folder, size and hash. */
export const OffboardExport = z.strictObject({
  file: z.string(),
  bytes: z.number().int().min(0),
  sha256: Hex64,
  records: z.number().int().min(0),
  auditEntries: z.number().int().min(0),
});
export type OffboardExport = z.infer<typeof OffboardExport>;

/** The events of `offboarding-{tenant}-{requestId}`: ids, roles' subs, counts and hashes; nothing of the tenant's content. */
export const OffboardEvent = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('OffboardingRequested'),
    requestId: z.string(),
    tenant: z.string(),
    reason: OffboardReason,
    export: z.boolean(),
    requestedBy: z.string(),
    requestedAt: IsoDate,
  }),
  z.strictObject({ type: z.literal('OffboardingApproved'), approvedBy: z.string(), approvedAt: IsoDate }),
  z.strictObject({
    type: z.literal('OffboardingStepCompleted'),
    step: OffboardStepSchema,
    startedAt: IsoDate,
    finishedAt: IsoDate,
    attempts: z.number().int().min(0),
    counts: StepCounts,
    /** The export step's archive; the delete step's audit head; both absent otherwise. */
    export: OffboardExport.nullable().optional(),
    auditHead: z
      .strictObject({ entries: z.number().int().min(0), seq: z.number().int().min(0), hash: Hex64 })
      .nullable()
      .optional(),
  }),
  /** The texts the byte scan looks for, sealed under a key of the platform tenant (shredded once certified). */
  z.strictObject({ type: z.literal('OffboardingWorksetCaptured'), workset: z.unknown() }),
  z.strictObject({ type: z.literal('OffboardingFailed'), code: z.string(), at: IsoDate }),
  z.strictObject({ type: z.literal('OffboardingCertified'), signed: z.unknown(), at: IsoDate }),
]);
export type OffboardEvent = z.infer<typeof OffboardEvent>;

export interface OffboardState {
  request?: Extract<OffboardEvent, { type: 'OffboardingRequested' }>;
  approval?: { approvedBy: string; approvedAt: string };
  steps: Map<OffboardStep, Extract<OffboardEvent, { type: 'OffboardingStepCompleted' }>>;
  workset?: unknown;
  failure?: { code: string; at: string };
  certified?: unknown;
}

export const initialOffboardState = (): OffboardState => ({ steps: new Map() });

/** Folds one event of an off-boarding stream. */
export function evolveOffboard(state: OffboardState, event: OffboardEvent): OffboardState {
  switch (event.type) {
    case 'OffboardingRequested':
      return { ...state, request: event };
    case 'OffboardingApproved':
      return { ...state, approval: { approvedBy: event.approvedBy, approvedAt: event.approvedAt } };
    case 'OffboardingStepCompleted': {
      const steps = new Map(state.steps);
      if (!steps.has(event.step)) steps.set(event.step, event);
      return { ...state, steps };
    }
    case 'OffboardingWorksetCaptured':
      return state.workset === undefined ? { ...state, workset: event.workset } : state;
    case 'OffboardingFailed':
      return { ...state, failure: { code: event.code, at: event.at } };
    case 'OffboardingCertified':
      return { ...state, certified: event.signed };
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
}

/** The status a stream's fold shows (the workflow's live progress says more while it runs). */
export function offboardStatus(state: OffboardState): OffboardStatus {
  if (state.certified !== undefined) return 'completed';
  if (state.failure) return state.failure.code === 'OFFBOARD.BLOCKED_BY_LEGAL_HOLD' ? 'blocked_by_legal_hold' : 'failed';
  return state.approval ? 'running' : 'awaiting_approval';
}

/** Progress as the API shows it: ids, subs of the two platform admins, counts. */
export const OffboardProgress = z.strictObject({
  requestId: z.string(),
  tenant: z.string(),
  reason: OffboardReason,
  export: z.boolean(),
  status: OffboardStatus,
  requestedBy: z.string(),
  requestedAt: IsoDate,
  approvedBy: z.string().nullable(),
  currentStep: OffboardStepSchema.nullable(),
  steps: z.array(z.strictObject({ step: OffboardStepSchema, finishedAt: IsoDate, attempts: z.number().int(), counts: StepCounts })),
  failure: z.strictObject({ code: z.string() }).nullable(),
  certificateAvailable: z.boolean(),
});
export type OffboardProgress = z.infer<typeof OffboardProgress>;

/** Every request made with a token of an off-boarded (or sealed, being off-boarded) tenant. */
export class TenantOffboarded extends DomainError {
  constructor() {
    super('TENANT.OFFBOARDED', 'this tenant has been off-boarded: its data is destroyed and its name cannot be used again');
  }
}

/** Off-boarding is for the platform's admins, acting from the platform tenant. */
export class OffboardForbidden extends DomainError {
  constructor() {
    super('AUTH.FORBIDDEN', 'this operation needs the platform-admin role in a token of the platform tenant', { role: 'platform-admin' });
  }
}

/**
 * No such off-boarding request for this tenant (the same answer whether or not the tenant exists); without
 * `requestId` when none was named, i.e. off-boarding asked for a name no tenant can have.
 */
export class OffboardNotFound extends DomainError {
  constructor(requestId?: string) {
    if (requestId === undefined) super('OFFBOARD.NOT_FOUND', `no tenant has this name: ${TENANT_ID_RULE}`);
    else super('OFFBOARD.NOT_FOUND', `no off-boarding request ${requestId} for this tenant`, { requestId });
  }
}

export class OffboardSelfApproval extends DomainError {
  constructor() {
    super('OFFBOARD.SELF_APPROVAL', 'an off-boarding must be approved by a platform admin other than the one who requested it');
  }
}

export class OffboardNotAwaitingApproval extends DomainError {
  constructor(requestId: string) {
    super('OFFBOARD.NOT_AWAITING_APPROVAL', `off-boarding ${requestId} is not awaiting approval`, { requestId });
  }
}

/**
 * The tenant has active legal holds. Off-boarding destroys everything at
 * once, which a hold forbids; the platform cannot override a tenant's hold:
 * the tenant's `legal` role releases it first (documented in the README).
 */
export class OffboardBlockedByLegalHold extends DomainError {
  constructor(holds: number) {
    super('OFFBOARD.BLOCKED_BY_LEGAL_HOLD', `the tenant has ${holds} active legal hold(s); they must be released before off-boarding`, {
      holds,
    });
  }
}

/** The tenant is already off-boarded or being off-boarded. */
export class TenantAlreadyOffboarded extends DomainError {
  constructor() {
    super('OFFBOARD.TENANT_CLOSED', 'this tenant is already off-boarded or being off-boarded');
  }
}

export class OffboardPlatformTenant extends DomainError {
  constructor() {
    super('OFFBOARD.PLATFORM_TENANT', 'the platform tenant cannot be off-boarded');
  }
}

export class OffboardExportNotConfigured extends DomainError {
  constructor() {
    super('OFFBOARD.EXPORT_NOT_CONFIGURED', 'an export was asked for but ELMA_OFFBOARD_EXPORT_DIR is not set');
  }
}

export class OffboardCertificateNotReady extends DomainError {
  constructor(requestId: string) {
    super('OFFBOARD.CERTIFICATE_NOT_READY', `off-boarding ${requestId} has no certificate yet`, { requestId });
  }
}
