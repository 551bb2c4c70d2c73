import type { OffboardProgress, Principal, SignedOffboardingCertificate } from '@elma/domain';
import { offboardProgress, type OffboardingRequests } from '@elma/application';
import { TemporalUnavailable } from '@elma/infra';

/** How the API starts off-boarding workflows (Temporal), injected by the process that runs the API. */
export interface OffboardWorkflows {
  /** Rejects with TemporalUnavailable, within seconds, when Temporal cannot be reached. */
  reachable?(): Promise<void>;
  /** Idempotent by request id. */
  start(input: { tenant: string; requestId: string }): Promise<void>;
}

/** What the off-boarding endpoints do: platform admins request, approve (four eyes) and follow; the workflow does the rest. */
export class OffboardingDesk {
  constructor(
    private readonly requests: OffboardingRequests,
    private readonly workflows: OffboardWorkflows | undefined,
  ) {}

  async request(caller: Principal, tenant: string, body: unknown, httpRequestId: string): Promise<OffboardProgress> {
    const state = await this.requests.request(caller, tenant, body, httpRequestId);
    return offboardProgress(state.requestId, state);
  }

  /** A second platform admin; starts the workflow (again, idempotently, when the same approver repeats it). */
  async approve(caller: Principal, tenant: string, requestId: string, httpRequestId: string): Promise<OffboardProgress> {
    const workflows = this.workflows;
    if (!workflows) throw new TemporalUnavailable();
    await workflows.reachable?.();
    const state = await this.requests.approve(caller, tenant, requestId, httpRequestId);
    await workflows.start({ tenant, requestId });
    return offboardProgress(requestId, state, 'seal');
  }

  async progress(caller: Principal, tenant: string, requestId: string, httpRequestId: string): Promise<OffboardProgress> {
    return offboardProgress(requestId, await this.requests.follow(caller, tenant, requestId, httpRequestId));
  }

  certificate(caller: Principal, tenant: string, requestId: string, httpRequestId: string): Promise<SignedOffboardingCertificate> {
    return this.requests.certificate(caller, tenant, requestId, httpRequestId);
  }
}
