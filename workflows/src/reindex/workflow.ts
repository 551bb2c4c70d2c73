import { ApplicationFailure, proxyActivities, setHandler } from '@temporalio/workflow';
import type { ReindexActivities } from '@elma/activities';
import { INVALID_TENANT, reindexStageQuery, TENANT_ID_PATTERN, type ReindexInput, type ReindexResult, type ReindexStage } from './messages';
import { ACTIVITY_RETRY, HEARTBEAT_TIMEOUT } from '../retry';

const { dropTenantViews, replayTenantLog, tenantViewsStrategy, rebuildTenantViewsBeside } = proxyActivities<ReindexActivities>({
  // A replay reads the tenant's whole log; the timeout bounds a stuck attempt, not the normal case.
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { ...ACTIVITY_RETRY, nonRetryableErrorTypes: [INVALID_TENANT] },
});

/**
 * Rebuilds a tenant's views (the index projection) from its event log. With an index that swaps
 * (Elasticsearch), a new index is built from the log beside the live one and the alias moved to it
 * in one step, so queries never see a partial view. Otherwise (SQLite): drop, then replay.
 *
 * Order matters in place: a replay on top of stale views would keep records whose events are gone (erased
 * streams), so the drop must complete first. Each activity is idempotent on its own (dropping an empty
 * partition drops 0; replay upserts), so a retried attempt converges.
 */
export async function reindexWorkflow({ tenant }: ReindexInput): Promise<ReindexResult> {
  // Validate before any side effect; a malformed id fails the workflow at once instead of retrying.
  if (typeof tenant !== 'string' || !TENANT_ID_PATTERN.test(tenant)) {
    throw ApplicationFailure.create({
      type: INVALID_TENANT,
      message: 'tenant ids are lower-case letters, digits and underscores (1 to 63 characters)',
      nonRetryable: true,
    });
  }
  let stage: ReindexStage = 'planning';
  setHandler(reindexStageQuery, () => stage);

  if ((await tenantViewsStrategy()) === 'alias_swap') {
    stage = 'building';
    const built = await rebuildTenantViewsBeside(tenant);
    stage = 'done';
    return {
      tenant,
      dropped: built.dropped,
      replayedEvents: built.events,
      memories: built.memories,
      ...(built.swap ? { swap: built.swap } : {}),
    };
  }

  stage = 'dropping';
  const dropped = await dropTenantViews(tenant);
  stage = 'replaying';
  const { events, memories } = await replayTenantLog(tenant);
  stage = 'done';
  return { tenant, dropped, replayedEvents: events, memories };
}
