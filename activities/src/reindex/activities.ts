import { Principal, ValidationFailed } from '@elma/domain';
import { withDomainFailures } from '../shared/failures';
import type { TenantViews } from './types';

export type { TenantViews } from './types';

/** The side-effecting steps of `reindexWorkflow`; thin on purpose, the work is in `TenantViews`. */
export function createReindexActivities(deps: { views: TenantViews }) {
  return {
    /** Returns the number of records dropped. */
    async dropTenantViews(tenant: string): Promise<number> {
      return withDomainFailures(async () => deps.views.drop(validTenant(tenant)));
    },

    async replayTenantLog(tenant: string): Promise<{ events: number; memories: number }> {
      return withDomainFailures(async () => deps.views.replay(validTenant(tenant)));
    },

    async tenantViewsStrategy(): Promise<'in_place' | 'alias_swap'> {
      return deps.views.strategy();
    },

    /** Index names only (never content) travel back into the workflow history. */
    async rebuildTenantViewsBeside(tenant: string) {
      return withDomainFailures(async () => deps.views.rebuildBeside(validTenant(tenant)));
    },
  };
}

export type ReindexActivities = ReturnType<typeof createReindexActivities>;

// The workflow validates too; this guards activities started by anything else (another workflow, a retry
// of an old history) from reaching a partition with a malformed id.
function validTenant(tenant: string): string {
  const parsed = Principal.shape.tenant.safeParse(tenant);
  if (!parsed.success) throw new ValidationFailed([{ path: 'tenant', message: parsed.error.issues[0]?.message ?? 'invalid' }]);
  return parsed.data;
}
