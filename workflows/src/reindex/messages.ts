import { defineQuery } from '@temporalio/workflow';

/** Business workflow id: `reindex-<tenant>-<requestId>`. */
export function reindexWorkflowId(tenant: string, requestId: string): string {
  return `reindex-${tenant}-${requestId}`;
}

export interface ReindexInput {
  tenant: string;
}

export interface ReindexResult {
  tenant: string;
  /** Records removed from the tenant's views before the replay. */
  dropped: number;
  /** Log events read during the replay. */
  replayedEvents: number;
  /** Memory records in the tenant's views after the replay. */
  memories: number;
  /** With an index that swaps (Elasticsearch): the concrete index the alias moved from and to. */
  swap?: { from?: string; to: string };
}

export type ReindexStage = 'planning' | 'dropping' | 'replaying' | 'building' | 'done';

/** Where a running reindex is; shown by operators' tooling. Carries no content. */
export const reindexStageQuery = defineQuery<ReindexStage>('reindexStage');

/** Failure type for a malformed tenant id: never retried. */
export const INVALID_TENANT = 'REINDEX.INVALID_TENANT';

/**
 * Tenant ids as the domain defines them (`TENANT_ID_PATTERN` in @elma/domain). Repeated here rather than
 * imported so the workflow bundle does not pull the domain (and zod) into the sandbox; messages.unit.spec.ts keeps the two equal.
 */
export const TENANT_ID_PATTERN = /^[a-z0-9][a-z0-9_]{0,62}$/;
