import {
  SUBJECT_PSEUDONYM,
  SYSTEM_ROLE,
  CreateErasureRequest,
  DomainError,
  ERASURE_EVENT_TYPES,
  ErasureListPosition,
  ErasureListQuery,
  ErasureRequestRecord,
  parseQueryOrThrow,
  streams,
  type ErasureProgress,
  type Page,
  ErasureNotFound,
  isHeld,
  parseOrThrow,
  ROLES,
  type Clock,
  type ErasureReason,
  type ErasureScope,
  type EventLog,
  type IdSource,
  type MemoryIndex,
  type Principal,
  type Requester,
  type SignedCertificate,
} from '@elma/domain';
import type { PageCursors } from '@elma/shared';
import type { AuditLog } from '../audit/audit-log';
import type { LegalHolds } from '../governance/legal-holds';
import { RETENTION_ACTOR, heldView, isExpired } from './erasure-common';
import { ErasureOutbox, type ErasureStart } from './erasure-outbox';
import type { Erasure, ErasureStore } from './erasure-store';
import type { ErasureFingerprints } from './fingerprints';

/** Roles that may request any erasure (the tenant policy's `erase` rules decide the rest). */
export const ERASURE_ROLES = ROLES.erasure;
/** Who may read an erasure's progress and certificate besides its requester. */
const READER_ROLES: readonly string[] = ROLES.erasureReader;

export class ErasureForbidden extends DomainError {
  constructor() {
    super('AUTH.FORBIDDEN', 'this erasure needs the compliance or dpo role, or a data subject asking for their own records');
  }
}

/**
 * Erasure requests, API side and the retention sweep's: who may ask, storing
 * the request and its start in the outbox, who may follow it, and the audit
 * entries of approvals and certificate exports.
 */
export class ErasureRequests {
  private readonly outbox: ErasureOutbox;

  constructor(
    private readonly deps: {
      log: EventLog;
      store: ErasureStore;
      index: MemoryIndex;
      holds: LegalHolds;
      audit: AuditLog;
      fingerprints: ErasureFingerprints;
      clock: Clock;
      ids: IdSource;
      cursors: PageCursors;
    },
  ) {
    this.outbox = new ErasureOutbox({ log: deps.log });
  }

  /**
   * Validates and stores a request; the caller then starts the workflow and
   * reports it with `workflowStarted`. A `content` scope becomes a keyed
   * fingerprint here and the text goes no further. The start is queued in the
   * outbox before the request is stored, so a request never sits stored
   * without a workflow: `startPending` finds any whose start did not happen.
   */
  async request(principal: Principal, body: unknown, httpRequestId: string): Promise<{ requestId: string; reason: ErasureReason }> {
    const input = parseOrThrow(CreateErasureRequest, body);
    const privileged = principal.roles.some((r) => (ERASURE_ROLES as readonly string[]).includes(r));
    const ownRecords = input.scope.type === 'subject' && input.scope.subject === principal.sub && input.reason === 'subject_request';
    if (!privileged && !ownRecords) {
      await this.auditRequest(principal, 'deny', 'role:compliance|dpo', ['erasure'], httpRequestId);
      throw new ErasureForbidden();
    }
    const scope: ErasureScope =
      input.scope.type === 'content'
        ? { type: 'fingerprint', fingerprint: this.deps.fingerprints.content(principal.tenant, input.scope.text) }
        : input.scope;
    const requestId = `era_${this.deps.ids.next()}`;
    await this.outbox.queue({ tenant: principal.tenant, requestId, reason: input.reason });
    await this.deps.store.create(
      {
        requestId,
        tenant: principal.tenant,
        reason: input.reason,
        // A data subject erasing their own records is not named: the certificate outlives the erasure.
        requestedBy: requesterOf(principal, { named: !(input.scope.type === 'subject' && input.scope.subject === principal.sub) }),
        requestedAt: this.deps.clock.now().toISOString(),
      },
      scope,
    );
    await this.auditRequest(principal, 'allow', privileged ? 'role:erasure' : 'self-service', [`erasure/${requestId}`], httpRequestId);
    return { requestId, reason: input.reason };
  }

  /** Closes the request's outbox entry once Temporal has its workflow. */
  async workflowStarted(tenant: string, requestId: string): Promise<void> {
    await this.outbox.started(tenant, requestId);
  }

  /**
   * Starts the workflow of every queued request that has none yet (Temporal
   * was unreachable, or the process died between storing and starting).
   * `start` must be idempotent by request id. An entry whose request was
   * never stored (the process died in between) is closed without a start.
   * Stops at the first failed start: Temporal is likely down, the rest waits
   * for the next drain.
   */
  async startPending(start: (entry: ErasureStart) => Promise<void>): Promise<{ started: number; pending: number }> {
    const pending = await this.outbox.pending();
    let started = 0;
    for (const entry of pending) {
      if (await this.deps.store.exists(entry.tenant, entry.requestId)) {
        try {
          await start(entry);
        } catch {
          return { started, pending: pending.length - started };
        }
      }
      await this.outbox.started(entry.tenant, entry.requestId);
      started++;
    }
    return { started, pending: 0 };
  }

  /** The retention sweep's request for one tenant and run; idempotent by its id. */
  async requestRetention(tenant: string, requestId: string, asOf: string): Promise<void> {
    if (await this.deps.store.exists(tenant, requestId)) return;
    await this.deps.store.create(
      {
        requestId,
        tenant,
        reason: 'retention',
        requestedBy: { sub: RETENTION_ACTOR, roles: [SYSTEM_ROLE], clearance: 'restricted' },
        requestedAt: this.deps.clock.now().toISOString(),
      },
      { type: 'expired', asOf },
    );
  }

  /** Throws `ErasureNotFound` unless the caller may follow this erasure (requester or reader roles). */
  async readable(principal: Principal, requestId: string): Promise<ErasureRequestRecord> {
    return (await this.follow(principal, requestId)).request;
  }

  /** The erasure as its stream stands (one read), if the caller may follow it; else `ErasureNotFound`. */
  async follow(principal: Principal, requestId: string): Promise<Erasure> {
    const erasure = await this.deps.store.load(principal.tenant, requestId);
    const { request } = erasure;
    if (request.requestedBy.sub !== principal.sub && !principal.roles.some((r) => READER_ROLES.includes(r))) {
      throw new ErasureNotFound(requestId);
    }
    return erasure;
  }

  /**
   * `GET /v1/erasures`: a page of the tenant's erasures the caller may follow
   * (every one for the reader roles, otherwise those the caller requested,
   * such as a data subject's own), in the order they were requested, each as
   * `progressOf` tells it (live, from the workflow), with `status` applied
   * before the page is cut. The cursor is the log position of the last
   * request listed, bound to the tenant, the caller and the filter.
   */
  async list(
    principal: Principal,
    input: unknown,
    progressOf: (requestId: string) => Promise<ErasureProgress>,
  ): Promise<Page<ErasureProgress>> {
    const query = parseQueryOrThrow(ErasureListQuery, input);
    const scope = ['erasures', principal.tenant, principal.sub, query.status ?? ''];
    const start =
      query.cursor === undefined
        ? undefined
        : BigInt(this.deps.cursors.open(scope, query.cursor, (v) => ErasureListPosition.safeParse(v).data).position);
    const readsAll = principal.roles.some((r) => READER_ROLES.includes(r));
    const listed: { progress: ErasureProgress; position: bigint }[] = [];
    let batch: { requestId: string; position: bigint }[] = [];
    // Progress is asked for a batch at a time (one query of its workflow each), until a page and one more are found.
    const flush = async () => {
      const progress = await Promise.all(batch.map((r) => progressOf(r.requestId)));
      progress.forEach((p, i) => {
        if (query.status === undefined || p.status === query.status) listed.push({ progress: p, position: batch[i].position });
      });
      batch = [];
    };
    for await (const event of this.deps.log.readAll({
      fromPosition: start ?? 'start',
      filter: { streamNamePrefix: [streams.erasure(principal.tenant, '')], eventType: [ERASURE_EVENT_TYPES.requested] },
    })) {
      const request = ErasureRequestRecord.safeParse(event.data).data;
      if (!request || request.tenant !== principal.tenant || (!readsAll && request.requestedBy.sub !== principal.sub)) continue;
      batch.push({ requestId: request.requestId, position: event.position });
      if (listed.length + batch.length > query.limit) await flush();
      if (listed.length > query.limit) break;
    }
    await flush();
    const page = listed.slice(0, query.limit);
    const nextCursor =
      listed.length > query.limit ? this.deps.cursors.seal(scope, { position: page[page.length - 1].position.toString() }) : null;
    return { items: page.map((l) => l.progress), nextCursor };
  }

  /** The certificate, once issued, for a caller who may follow the erasure; each export of it is audited. */
  async certificate(principal: Principal, requestId: string, httpRequestId: string): Promise<SignedCertificate | undefined> {
    const erasure = await this.follow(principal, requestId);
    const signed = erasure.certificate;
    if (!signed) return undefined;
    // A data subject who erased themself is named on the certificate by the pseudonym the erasure then forgot (the
    // vault no longer knows them as a subject): their downloads of it are recorded under that name too.
    const certifiedAs = signed.certificate.request.requestedBy;
    const self = erasure.request.requestedBy.sub === principal.sub && SUBJECT_PSEUDONYM.test(certifiedAs);
    await this.deps.audit.record({
      tenant: principal.tenant,
      actor: self ? { sub: certifiedAs, roles: principal.roles } : principal,
      subject: null,
      operation: 'export',
      resourceIds: [`erasure/${requestId}`, 'certificate'],
      decision: { effect: 'allow', rule: 'erasure:certificate' },
      requestId: httpRequestId,
    });
    return signed;
  }

  /** Tenants with records (the retention sweep visits each). */
  tenants(): Promise<string[]> {
    return this.deps.index.tenants();
  }

  /** Expired records not on hold, as the retention sweep sees them at `asOf`. */
  async countExpired(tenant: string, asOf: string): Promise<number> {
    const holds = await this.deps.holds.list(tenant, { fresh: true });
    let n = 0;
    for await (const entry of this.deps.index.lineage(tenant)) if (isExpired(entry, asOf) && !isHeld(heldView(entry), holds)) n++;
    return n;
  }

  /**
   * Keeps the approver's display name (token claim `name`) in the erasure stream for the certificate, before the
   * approval is signalled: the workflow carries the approver's subject only. Nothing without a name.
   */
  async nameApprover(principal: Principal, requestId: string): Promise<void> {
    if (principal.name) await this.deps.store.nameApprover(principal.tenant, requestId, { sub: principal.sub, name: principal.name });
  }

  auditApproval(principal: Principal, requestId: string, effect: 'allow' | 'deny', rule: string, httpRequestId: string) {
    return this.auditRequest(principal, effect, rule, [`erasure/${requestId}`, 'approve'], httpRequestId);
  }

  private auditRequest(principal: Principal, effect: 'allow' | 'deny', rule: string, resourceIds: string[], requestId: string) {
    return this.deps.audit.record({
      tenant: principal.tenant,
      actor: principal,
      subject: null,
      operation: 'erase',
      resourceIds,
      decision: { effect, rule },
      requestId,
    });
  }
}

function requesterOf(principal: Principal, { named }: { named: boolean }): Requester {
  return {
    ...(named && principal.name ? { name: principal.name } : {}),
    sub: principal.sub,
    roles: principal.roles,
    clearance: principal.clearance,
    ...(principal.project ? { project: principal.project } : {}),
    ...(principal.department ? { department: principal.department } : {}),
  };
}
