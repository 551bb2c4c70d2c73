import type { ConsolidationService } from '@elma/application';
import { createConsolidationActivities, type ConsolidationActivities } from './consolidation/activities';
import { createErasureActivities, type ErasureActivities, type ErasureActivityDeps } from './erasure/activities';
import { createReindexActivities, type TenantViews } from './reindex/activities';
import { createOffboardingActivities, type OffboardingActivities } from './offboarding/activities';
import type { OffboardingSteps } from '@elma/application';
import { createSubjectAccessActivities, type SubjectAccessActivities, type SubjectAccessActivityDeps } from './subject-access/activities';

export type { TenantViews } from './reindex/types';
export { createReindexActivities, type ReindexActivities } from './reindex/activities';
export {
  createErasureActivities,
  ERASURE_STEP_OF_ACTIVITY,
  type ErasureActivities,
  type ErasureActivityDeps,
  type Attempted,
} from './erasure/activities';
export { createConsolidationActivities, type ConsolidationActivities } from './consolidation/activities';
export { withDomainFailures } from './shared/failures';
export { createOffboardingActivities, type OffboardingActivities } from './offboarding/activities';
export { createSubjectAccessActivities, type SubjectAccessActivities, type SubjectAccessActivityDeps } from './subject-access/activities';

/** Everything the activities need, as ports. Grows with each capability (erasure, consolidation, ...). */
export interface ActivityDeps {
  views: TenantViews;
  /** Omitted by workers that only rebuild views (tests of the reindex workflow). */
  erasure?: ErasureActivityDeps;
  consolidation?: ConsolidationService;
  offboarding?: OffboardingSteps;
  subjectAccess?: SubjectAccessActivityDeps;
}

/** All of ELMA's activities, ready for `Worker.create({ activities })`. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createReindexActivities({ views: deps.views }),
    ...(deps.erasure ? createErasureActivities({ erasure: deps.erasure }) : {}),
    ...(deps.consolidation && deps.erasure
      ? createConsolidationActivities({ consolidation: deps.consolidation, tenants: () => deps.erasure!.requests.tenants() })
      : {}),
    ...(deps.offboarding ? createOffboardingActivities({ offboarding: deps.offboarding }) : {}),
    ...(deps.subjectAccess ? createSubjectAccessActivities({ subjectAccess: deps.subjectAccess }) : {}),
  };
}

export type ElmaActivities = ReturnType<typeof createReindexActivities> &
  ErasureActivities &
  ConsolidationActivities &
  OffboardingActivities &
  SubjectAccessActivities;
