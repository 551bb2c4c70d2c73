import type { Principal, SignedSubjectAccessManifest, SubjectAccessProgress } from '@elma/domain';
import type { ExportFile, SubjectAccessService } from '@elma/application';
import { TemporalUnavailable } from '@elma/infra';

/** How the API reaches the subject-access workflows (Temporal), injected by the process that runs the API. */
export interface SubjectAccessWorkflows {
  /** Rejects with TemporalUnavailable, within seconds, when Temporal cannot be reached. */
  reachable?(): Promise<void>;
  /** Idempotent by request id. Rejects with TemporalUnavailable when Temporal cannot be reached in time. */
  start(input: { tenant: string; requestId: string; subjectPseudonym: string }): Promise<void>;
}

/** What the subject-access endpoints do: store the request, start its workflow, serve status and files. */
export class SubjectAccessDesk {
  constructor(
    private readonly service: Pick<SubjectAccessService, 'request' | 'progress' | 'file' | 'manifest' | 'fail'>,
    private readonly workflows: SubjectAccessWorkflows | undefined,
  ) {}

  async create(caller: Principal, body: unknown, httpRequestId: string): Promise<SubjectAccessProgress> {
    if (!this.workflows) throw new TemporalUnavailable();
    // Before anything is stored: with Temporal down the caller gets 503 at once and no request is left behind.
    await this.workflows.reachable?.();
    const { requestId, subjectPseudonym } = await this.service.request(caller, body, httpRequestId);
    try {
      await this.workflows.start({ tenant: caller.tenant, requestId, subjectPseudonym });
    } catch (error) {
      // Temporal went away after the check: the request ends as failed (its sealed subject shredded), the caller may ask again.
      await this.service.fail(caller.tenant, requestId, 'TEMPORAL.UNAVAILABLE').catch(() => undefined);
      throw error;
    }
    return this.service.progress(caller, requestId);
  }

  progress(caller: Principal, requestId: string): Promise<SubjectAccessProgress> {
    return this.service.progress(caller, requestId);
  }

  file(caller: Principal, requestId: string, file: ExportFile, httpRequestId: string): Promise<Buffer> {
    return this.service.file(caller, requestId, file, httpRequestId);
  }

  manifest(caller: Principal, requestId: string, httpRequestId: string): Promise<SignedSubjectAccessManifest> {
    return this.service.manifest(caller, requestId, httpRequestId);
  }
}
