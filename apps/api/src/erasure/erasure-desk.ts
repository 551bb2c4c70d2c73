import {
  CertificateNotReady,
  ROLES,
  ErasureNotAwaitingApproval,
  ErasureSelfApproval,
  type ErasureProgress,
  type ErasureReason,
  type Page,
  type Principal,
  type SignedCertificate,
} from '@elma/domain';
import { Forbidden, type ErasureRequests } from '@elma/application';
import { renderCertificatePdf, TemporalUnavailable, type CertificateSigner } from '@elma/infra';
import { initialErasureProgress } from '@elma/workflows';

/** How the API reaches the erasure workflows (Temporal), injected by the process that runs the API. */
export interface ErasureWorkflows {
  /** Rejects with TemporalUnavailable, within seconds, when Temporal cannot be reached. */
  reachable?(): Promise<void>;
  /** Idempotent by request id. Rejects with TemporalUnavailable when Temporal cannot be reached in time. */
  start(input: { tenant: string; requestId: string; reason: ErasureReason }): Promise<void>;
  /** Undefined when Temporal has no such workflow. */
  progress(tenant: string, requestId: string): Promise<ErasureProgress | undefined>;
  approve(tenant: string, requestId: string, approvedBy: string): Promise<void>;
  /** Erasure workflows by status (every status, 0 included), for /metrics. */
  countByStatus?(): Promise<Record<string, number>>;
}

export { TemporalUnavailable };

export const ERASURE_APPROVER_ROLE = ROLES.erasureApprover;

/** What the erasure endpoints (REST and GraphQL) do: store the request, drive the workflow, read its outcome. */
export class ErasureDesk {
  constructor(
    private readonly erasure: ErasureRequests,
    private readonly signer: Pick<CertificateSigner, 'jwks'>,
    private readonly workflows: ErasureWorkflows | undefined,
  ) {}

  async create(caller: Principal, body: unknown, httpRequestId: string): Promise<ErasureProgress> {
    const workflows = this.require();
    // Before anything is stored: with Temporal down the caller gets 503 at once and no request is left behind.
    await workflows.reachable?.();
    const { requestId, reason } = await this.erasure.request(caller, body, httpRequestId);
    try {
      await workflows.start({ tenant: caller.tenant, requestId, reason });
    } catch (error) {
      if (!(error instanceof TemporalUnavailable)) throw error;
      // Temporal went away after the check. The request is stored and queued in the outbox, which `elma start`
      // drains once Temporal answers again, so it is accepted all the same.
      return initialErasureProgress(requestId, caller.tenant, reason);
    }
    await this.erasure.workflowStarted(caller.tenant, requestId);
    return (
      (await workflows.progress(caller.tenant, requestId).catch(() => undefined)) ??
      initialErasureProgress(requestId, caller.tenant, reason)
    );
  }

  async progress(caller: Principal, requestId: string): Promise<ErasureProgress> {
    const erasure = await this.erasure.follow(caller, requestId);
    const { request } = erasure;
    const live = await this.require().progress(caller.tenant, requestId);
    // The workflow knows the approver by subject only; the display name is in the erasure stream.
    if (live) return withApproverName(live, erasure.approverName(live.approvedBy ?? null));
    // Temporal no longer has the workflow (retention of closed workflows): the erasure stream still says how it ended.
    const certified = erasure.certificate;
    const approvedBy = certified?.certificate.request.approvedBy ?? null;
    const ended: ErasureProgress = {
      requestId,
      tenant: caller.tenant,
      reason: request.reason,
      status: certified ? 'completed' : 'failed',
      currentStep: null,
      steps: [...erasure.steps.values()],
      closureSize: certified ? certified.certificate.closure.size + certified.certificate.legalHoldExceptions.length : null,
      blockedByLegalHold: certified?.certificate.legalHoldExceptions.map((e) => e.recordId) ?? [],
      ...(approvedBy ? { approvedBy } : {}),
      certificateAvailable: certified !== undefined,
    };
    return withApproverName(ended, erasure.approverName(approvedBy));
  }

  /** The erasures the caller may follow, a page at a time, each with its progress as `progress` gives it. */
  list(caller: Principal, query: unknown): Promise<Page<ErasureProgress>> {
    return this.erasure.list(caller, query, (requestId) => this.progress(caller, requestId));
  }

  /** Role `dpo`, someone other than the requester, and only while the workflow waits for it. */
  async approve(caller: Principal, requestId: string, httpRequestId: string): Promise<ErasureProgress> {
    const workflows = this.require();
    const request = await this.erasure.readable(caller, requestId);
    if (!caller.roles.includes(ERASURE_APPROVER_ROLE)) {
      await this.erasure.auditApproval(caller, requestId, 'deny', 'role:dpo', httpRequestId);
      throw new Forbidden(ERASURE_APPROVER_ROLE);
    }
    if (request.requestedBy.sub === caller.sub) {
      await this.erasure.auditApproval(caller, requestId, 'deny', 'four-eyes', httpRequestId);
      throw new ErasureSelfApproval();
    }
    const before = await workflows.progress(caller.tenant, requestId);
    if (before?.status !== 'awaiting_approval') throw new ErasureNotAwaitingApproval(requestId);
    // The display name goes to the erasure stream, for the certificate; the workflow carries the subject only.
    await this.erasure.nameApprover(caller, requestId);
    await workflows.approve(caller.tenant, requestId, caller.sub);
    await this.erasure.auditApproval(caller, requestId, 'allow', 'role:dpo', httpRequestId);
    return withApproverName({ ...before, status: 'running', approvedBy: caller.sub }, caller.name);
  }

  async certificate(caller: Principal, requestId: string, httpRequestId: string): Promise<SignedCertificate> {
    const signed = await this.erasure.certificate(caller, requestId, httpRequestId);
    if (!signed) throw new CertificateNotReady(requestId);
    return signed;
  }

  async certificatePdf(caller: Principal, requestId: string, httpRequestId: string): Promise<Buffer> {
    return renderCertificatePdf(await this.certificate(caller, requestId, httpRequestId));
  }

  keys() {
    return this.signer.jwks();
  }

  private require(): ErasureWorkflows {
    if (!this.workflows) throw new TemporalUnavailable();
    return this.workflows;
  }
}

function withApproverName(progress: ErasureProgress, approvedByName: string | undefined): ErasureProgress {
  return approvedByName ? { ...progress, approvedByName } : progress;
}
