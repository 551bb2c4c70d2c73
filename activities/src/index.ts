import { createReindexActivities, type TenantViews } from './reindex/activities';

export type { TenantViews } from './reindex/types';
export { createReindexActivities, type ReindexActivities } from './reindex/activities';
export { withDomainFailures } from './shared/failures';

/** Everything the activities need, as ports. Grows with each capability (erasure, consolidation, ...). */
export interface ActivityDeps {
  views: TenantViews;
}

/** All of ELMA's activities, ready for `Worker.create({ activities })`. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createReindexActivities({ views: deps.views }),
  };
}

export type ElmaActivities = ReturnType<typeof createActivities>;
