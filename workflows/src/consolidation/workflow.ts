import { proxyActivities } from '@temporalio/workflow';
import type { ConsolidationActivities } from '@elma/activities';
import { TENANT_ID_PATTERN } from '../reindex/messages';
import { ACTIVITY_RETRY } from '../retry';
import type { ConsolidationInput, ConsolidationSweepResult, ConsolidationTotals } from './messages';

const { consolidationTenants, consolidationSubjects, consolidateSubject } = proxyActivities<ConsolidationActivities>({
  startToCloseTimeout: '30 minutes',
  retry: ACTIVITY_RETRY,
});

/**
 * ConsolidationWorkflow (issue 5 §4): merges, summaries and facts for the
 * tenant's subjects, one subject at a time (throttled per tenant: it never
 * competes with itself, and ingest and recall never wait for it). Each
 * subject's outputs are idempotent views, so a retry or a rerun converges.
 */
export async function consolidationWorkflow(input: ConsolidationInput): Promise<ConsolidationTotals> {
  const { tenant } = input;
  const totals: ConsolidationTotals = { tenant, subjects: 0, created: 0, unchanged: 0, skippedErased: 0 };
  if (!TENANT_ID_PATTERN.test(String(tenant))) return totals;
  const refs: string[] = input.subjectRefs ?? (await consolidationSubjects(tenant));
  for (const ref of refs) {
    const result = await consolidateSubject(tenant, ref);
    totals.subjects++;
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
