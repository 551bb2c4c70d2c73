import {
  ROLES,
  ReviewFlagQuery,
  ReviewFlagRaised,
  ResolveReviewFlagRequest,
  parseOrThrow,
  pageOfFlags,
  reviewDecider,
  streams,
  type Clock,
  type EventLog,
  type IdSource,
  type Principal,
  type ReviewEvent,
  type ReviewFlag,
  type ReviewFlagDraft,
  type ReviewFlagPage,
  type ReviewState,
  type SourceTrustObserved,
} from '@elma/domain';
import { deterministicUuid, keyedUuid } from '@elma/shared';
import type { AuditLog } from '../audit/audit-log';
import { foldStream, handleCommand, type Folded } from '../command/handle-command';
import { AuditedAccess } from '../governance/audited-access';

/** The actor of the audit entries of flags raised by the detectors (a process, not a person). */
export const REVIEW_ACTOR = 'elma.review';

/** At most this many record ids of a flag are named in its audit entry (the flag itself names them all). */
const AUDITED_IDS = 100;

/**
 * The tenant's review flags, `reviews-{tenant}`: raised by the detectors
 * (idempotent: a flag's id is a keyed hash of what was found), listed and
 * resolved by people with the review roles. Raising, listing and resolving
 * are audited. Flags are advisory: nothing here changes a memory record.
 */
export class ReviewFlags {
  private readonly folded = new Map<string, Folded<ReviewState>>();

  private readonly access: AuditedAccess;

  constructor(private readonly deps: { log: EventLog; audit: AuditLog; clock: Clock; ids: IdSource; fingerprintKey: Uint8Array }) {
    this.access = new AuditedAccess(deps.audit);
  }

  /**
   * Records the flags not raised before and audits each one. Returns the
   * flags raised now (none when all were known: a replayed batch).
   */
  async raise(tenant: string, drafts: readonly ReviewFlagDraft[]): Promise<ReviewFlagRaised[]> {
    if (drafts.length === 0) return [];
    // Parsed before it is written: a flag the stream could not read back would stop every later fold of it.
    const flags = drafts.map(({ key, ...draft }) =>
      ReviewFlagRaised.parse({
        ...draft,
        // Keyed: the key may hold a fact's entity and attribute, which must not be guessable from the id.
        id: `rf_${keyedUuid(this.deps.fingerprintKey, tenant, 'review-flag', key)}`,
      }),
    );
    const handled = await this.handle(tenant, { type: 'RaiseFlags', flags });
    const raised = handled.flatMap((e) => (e.type === 'ReviewFlagRaised' ? [e.data] : []));
    for (const flag of raised) {
      await this.deps.audit.record({
        tenant,
        actor: REVIEW_ACTOR,
        subject: null,
        operation: 'write',
        resourceIds: [flag.id, ...flag.recordIds.slice(0, AUDITED_IDS)],
        decision: { effect: 'allow', rule: `review.raise.${flag.kind}.${flag.rule}` },
        requestId: 'internal',
      });
    }
    return raised;
  }

  /** Remembers the tier each source system was seen with (only changes are written). */
  async observeSourceTrust(tenant: string, observations: SourceTrustObserved[]): Promise<void> {
    if (observations.length > 0) await this.handle(tenant, { type: 'ObserveSourceTrust', observations });
  }

  /** What the stream holds now: flags in the order raised, and the source tiers last seen. */
  async state(tenant: string): Promise<ReviewState> {
    return (await this.fold(tenant)).state;
  }

  /** Every flag of the tenant, in the order raised (internal: the evaluation harness and the detectors). */
  async all(tenant: string): Promise<ReviewFlag[]> {
    return [...(await this.state(tenant)).flags.values()];
  }

  /** `GET /v1/review-flags` (roles reviewer, admin, compliance, auditor): a page of the caller's tenant's flags. */
  async list(principal: Principal, query: unknown, requestId = 'internal'): Promise<ReviewFlagPage> {
    await this.access.require(principal, ROLES.reviewReaders, 'read', [], requestId);
    const parsed = parseOrThrow(ReviewFlagQuery, query);
    const page = pageOfFlags(await this.all(principal.tenant), parsed);
    await this.access.record(
      principal,
      'read',
      page.items.map((f) => f.id),
      requestId,
      'allow',
      'review.list',
    );
    return page;
  }

  /**
   * `POST /v1/review-flags/{id}/resolve` (roles reviewer, admin): confirms or
   * dismisses an open flag. Another tenant's flag is not in the caller's
   * stream: it is "not found", like an id that never existed.
   */
  async resolve(principal: Principal, id: string, body: unknown, requestId = 'internal'): Promise<ReviewFlag> {
    await this.access.require(principal, ROLES.reviewResolvers, 'write', [id], requestId);
    const request = parseOrThrow(ResolveReviewFlagRequest, body);
    await this.handle(principal.tenant, {
      type: 'ResolveFlag',
      id,
      decision: request.decision,
      by: principal.sub,
      at: this.deps.clock.now().toISOString(),
      ...(request.note !== undefined ? { note: request.note } : {}),
    });
    await this.access.record(principal, 'write', [id], requestId, 'allow', `review.resolve.${request.decision}`);
    return (await this.state(principal.tenant)).flags.get(id)!;
  }

  /** The stream folded, caught up from what this process folded before (other processes may have appended). */
  private async fold(tenant: string): Promise<Folded<ReviewState>> {
    const folded = await foldStream(this.deps.log, streams.reviews(tenant), reviewDecider, this.folded.get(tenant));
    this.folded.set(tenant, folded);
    return folded;
  }

  /**
   * A raise and a resolution happen once per flag: their ids are derived from it, so a retried append writes
   * nothing twice. An observation may recur (a tier can change back): its id is new, and the decider skips
   * one that changes nothing.
   */
  private eventId(tenant: string, event: ReviewEvent): string {
    switch (event.type) {
      case 'ReviewFlagRaised':
      case 'ReviewFlagResolved':
        return deterministicUuid(tenant, event.type, event.data.id);
      case 'SourceTrustObserved':
        return this.deps.ids.next();
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  }

  private async handle(tenant: string, command: Parameters<typeof reviewDecider.decide>[0]): Promise<ReviewEvent[]> {
    const handled = await handleCommand(this.deps.log, streams.reviews(tenant), reviewDecider, command, {
      from: await this.fold(tenant),
      toEventData: (event) => ({
        id: this.eventId(tenant, event),
        type: event.type,
        data: event.data,
        metadata: { tenant },
      }),
    });
    this.folded.set(tenant, { state: handled.state, revision: handled.revision });
    return handled.events;
  }
}
