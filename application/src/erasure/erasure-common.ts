import {
  DomainError,
  type Clock,
  type ErasureScope,
  type ErasureStep,
  type HoldTarget,
  type LineageEntry,
  type MemoryIndex,
  type StepRecord,
  type Workset,
} from '@elma/domain';
import type { AuditLog } from '../audit/audit-log';
import type { LegalHolds } from '../governance/legal-holds';
import type { Erasure, ErasureStore } from './erasure-store';

/** The actor of erasures the system starts itself (the retention sweep). */
export const RETENTION_ACTOR = 'system:retention';

/** How a step's activity attempt went, as Temporal reports it. */
export interface StepAttempt {
  attempt: number;
  /** When the step was first scheduled (ISO). */
  startedAt: string;
}

export interface ErasureSettings {
  approvalThreshold: number;
  approvalTimeoutMs: number;
}

export interface EraseSet {
  recordIds: string[];
  eventIds: string[];
}

export interface HeldRecord {
  recordId: string;
  holdIds: string[];
}

/**
 * Records a step once, with one audit entry; a repeated call (a retry)
 * changes nothing. Decides on the erasure as the step read it: no new read.
 */
export async function recordStep(
  deps: { store: ErasureStore; audit: AuditLog; clock: Clock },
  erasure: Erasure,
  step: ErasureStep,
  at: StepAttempt,
  counts: Record<string, number>,
): Promise<void> {
  const record: StepRecord = { step, startedAt: at.startedAt, finishedAt: deps.clock.now().toISOString(), attempts: at.attempt, counts };
  if (erasure.steps.has(step)) return;
  const { requestId, request } = erasure;
  await deps.audit.record({
    tenant: erasure.tenant,
    actor: request.requestedBy,
    subject: null,
    operation: 'erase',
    resourceIds: [`erasure/${requestId}`, `step/${step}`],
    decision: { effect: 'allow', rule: `erasure:${step}` },
    requestId,
  });
  await deps.store.completeStep(erasure, record);
}

/** The captured workset; a step after the closure cannot go on without it. */
export async function requireWorkset(erasure: Erasure): Promise<Workset> {
  const workset = await erasure.workset();
  if (!workset)
    throw new DomainError('ERASURE.NO_WORKSET', `erasure ${erasure.requestId} has no captured closure`, { requestId: erasure.requestId });
  return workset;
}

export function inScope(entry: LineageEntry, scope: Exclude<ErasureScope, { type: 'fingerprint' | 'records' }>): boolean {
  const ofSubject = (subject: string) => entry.subject === subject || entry.owner === subject;
  switch (scope.type) {
    case 'subject':
      return ofSubject(scope.subject);
    case 'time_range': {
      const at = Date.parse(entry.recordedAt);
      return at >= Date.parse(scope.from) && at < Date.parse(scope.to) && (scope.subject === undefined || ofSubject(scope.subject));
    }
    case 'expired':
      return isExpired(entry, scope.asOf);
  }
}

export function isExpired(entry: LineageEntry, asOf: string): boolean {
  return entry.expiresAt !== null && Date.parse(entry.expiresAt) <= Date.parse(asOf);
}

/** What `isHeld` looks at, from a lineage entry. */
export function heldView(entry: LineageEntry): HoldTarget {
  return {
    id: entry.id,
    subject: entry.subject,
    policy: { owner: entry.owner, project: entry.project },
    provenance: { parentIds: entry.parentIds, sourceEventIds: entry.sourceEventIds },
  };
}

/**
 * Whether a subject erased whole keeps its pseudonym: while any record of theirs is left (held, or not the
 * caller's to erase), or an active hold names them (the hold must still find them). Their events stream is
 * deleted only when they lose it: a kept pseudonym names the stream their next write goes to.
 */
export async function keepsPseudonym(
  deps: { holds: LegalHolds; index: MemoryIndex },
  tenant: string,
  scope: Extract<ErasureScope, { type: 'subject' }>,
  held: number,
): Promise<boolean> {
  if (held > 0) return true;
  const holds = await deps.holds.list(tenant, { fresh: true });
  if (holds.some((hold) => hold.scope.subjects?.includes(scope.subject))) return true;
  // Looked up by subject and owner (what `inScope` tests), not read from the tenant's whole lineage.
  return (await deps.index.lineageOf(tenant, { subjects: [scope.subject] })).some((entry) => inScope(entry, scope));
}
