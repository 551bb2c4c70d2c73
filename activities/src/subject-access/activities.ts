import type { SubjectAccessService } from '@elma/application';
import { withDomainFailures } from '../shared/failures';

/** What the subject-access activities call. */
export type SubjectAccessActivityDeps = Pick<SubjectAccessService, 'produce' | 'fail' | 'expire'>;

/**
 * The steps of `subjectAccessWorkflow`. Thin: the work (and its idempotency) is in `SubjectAccessService`.
 * Arguments and results are ids, counts and hashes: the export itself never enters the workflow history.
 */
export function createSubjectAccessActivities(deps: { subjectAccess: SubjectAccessActivityDeps }) {
  const s = deps.subjectAccess;
  return {
    subjectAccessProduce: (tenant: string, requestId: string) => withDomainFailures(() => s.produce(tenant, requestId)),
    subjectAccessFail: (tenant: string, requestId: string, code: string) => withDomainFailures(() => s.fail(tenant, requestId, code)),
    subjectAccessExpire: (tenant: string, requestId: string) => withDomainFailures(() => s.expire(tenant, requestId)),
  };
}

export type SubjectAccessActivities = ReturnType<typeof createSubjectAccessActivities>;
