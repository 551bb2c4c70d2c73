import { patched, proxyActivities } from '@temporalio/workflow';
import type { ConsolidationActivities } from '@elma/activities';
import { TENANT_ID_PATTERN } from '../reindex/messages';
import { ACTIVITY_RETRY, HEARTBEAT_TIMEOUT } from '../retry';
import type { ConsolidationInput, ConsolidationSweepResult, ConsolidationTotals } from './messages';

const { consolidationTenants, consolidationSubjects, consolidateSubject, consolidateSubjects } = proxyActivities<ConsolidationActivities>({
  // One batch of subjects takes seconds; the timeout bounds a stuck attempt, the heartbeat a dead worker.
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: ACTIVITY_RETRY,
});

/**
 * Subjects per activity: each activity reads the tenant's lineage once, so a
 * sweep costs (subjects / this) passes instead of one per subject, while one
 * attempt stays short enough to retry cheaply.
 */
export const SUBJECTS_PER_ACTIVITY = 25;

/**
 * ConsolidationWorkflow: merges, summaries and facts for the tenant's
 * subjects, a batch of subjects at a time (throttled per tenant: it never
 * competes with itself, and runs on the consolidation task queue, whose
 * worker takes one activity at a time, so ingest and recall never wait for
 * it). Each subject's outputs are idempotent views, so a retry or a rerun converges.
 */
export async function consolidationWorkflow(input: ConsolidationInput): Promise<ConsolidationTotals> {
  const { tenant } = input;
  const totals: ConsolidationTotals = { tenant, subjects: 0, created: 0, unchanged: 0, skippedErased: 0 };
  if (!TENANT_ID_PATTERN.test(String(tenant))) return totals;
  const refs: string[] = input.subjectRefs ?? (await consolidationSubjects(tenant));
  // Histories recorded before batching replay one activity per subject.
  const batch = patched('consolidate-subjects-in-batches') ? SUBJECTS_PER_ACTIVITY : 1;
  for (let at = 0; at < refs.length; at += batch) {
    const some = refs.slice(at, at + batch);
    const result = batch === 1 ? await consolidateSubject(tenant, some[0]) : await consolidateSubjects(tenant, some);
    totals.subjects += some.length;
    totals.created += result.created;
    totals.unchanged += result.unchanged;
    totals.skippedErased += result.skippedErased;
  }
  return totals;
}

/** Run by the consolidation Schedule: every tenant in turn. */
export async function consolidationSweepWorkflow(): Promise<ConsolidationSweepResult> {
  const result: ConsolidationSweepResult = { tenants: [] };
  for (const tenant of await consolidationTenants()) result.tenants.push(await consolidationWorkflow({ tenant }));
  return result;
}
