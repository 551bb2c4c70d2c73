import type { ConsolidationResult, ConsolidationService } from '@elma/application';
import { withDomainFailures } from '../shared/failures';

/**
 * The steps of `consolidationWorkflow`. Subjects travel as the id of one of
 * their records (a "subject ref"): workflow histories never hold a person's id.
 */
export function createConsolidationActivities(deps: { consolidation: ConsolidationService; tenants: () => Promise<string[]> }) {
  return {
    consolidationTenants: () => withDomainFailures(() => deps.tenants()),
    consolidationSubjects: (tenant: string) => withDomainFailures(() => deps.consolidation.subjectRefs(tenant)),
    /** Kept for histories recorded before subjects were consolidated in batches. */
    consolidateSubject: (tenant: string, subjectRef: string): Promise<ConsolidationResult> =>
      withDomainFailures(() => deps.consolidation.consolidate(tenant, subjectRef)),
    /** Several subjects with one pass over the tenant's lineage (see `ConsolidationService.consolidateMany`). */
    consolidateSubjects: (tenant: string, subjectRefs: string[]): Promise<ConsolidationResult> =>
      withDomainFailures(() => deps.consolidation.consolidateMany(tenant, subjectRefs)),
  };
}

export type ConsolidationActivities = ReturnType<typeof createConsolidationActivities>;
