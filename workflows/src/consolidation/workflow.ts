import { condition, continueAsNew, patched, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { ConsolidationActivities } from '@elma/activities';
import { TENANT_ID_PATTERN } from '../reindex/messages';
import { ACTIVITY_RETRY, HEARTBEAT_TIMEOUT } from '../retry';
import { consolidateSubjectsSignal, type ConsolidationInput, type ConsolidationSweepResult, type ConsolidationTotals } from './messages';

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

/** Most subjects one triggered pass takes; more wait for the next. */
export const TRIGGERED_SUBJECTS_PER_PASS = 200;
/** Pause between triggered passes: a pass reads the tenant's lineage, and ingest and recall come first. */
const PAUSE_BETWEEN_PASSES = '5 seconds';
/** How long the workflow waits for more triggers once none is pending, before it ends. */
const IDLE_BEFORE_END = '1 minute';

/**
 * The projection's triggers for one tenant (N new events of a subject, a
 * session end), one workflow per tenant (`consolidate-<tenant>-<task queue>`,
 * signalled with start). Subjects signalled while a pass runs wait and go together
 * into the next one, so under sustained ingest the number of lineage passes
 * follows the time they take, not the number of triggers: one workflow per
 * trigger made a backlog that kept a core busy and starved the API.
 */
export async function tenantConsolidationWorkflow(input: ConsolidationInput): Promise<ConsolidationTotals> {
  const { tenant } = input;
  const totals: ConsolidationTotals = { tenant, subjects: 0, created: 0, unchanged: 0, skippedErased: 0 };
  const pending = new Set<string>(input.subjectRefs ?? []);
  setHandler(consolidateSubjectsSignal, (refs) => {
    for (const ref of refs) pending.add(ref);
  });
  if (!TENANT_ID_PATTERN.test(String(tenant))) return totals;
  for (;;) {
    if (pending.size === 0 && !(await condition(() => pending.size > 0, IDLE_BEFORE_END))) return totals;
    const batch = [...pending].slice(0, TRIGGERED_SUBJECTS_PER_PASS);
    for (const ref of batch) pending.delete(ref);
    const result = await consolidateSubjects(tenant, batch);
    totals.subjects += batch.length;
    totals.created += result.created;
    totals.unchanged += result.unchanged;
    totals.skippedErased += result.skippedErased;
    // A long-lived tenant keeps its history short; what is pending goes along.
    if (workflowInfo().continueAsNewSuggested)
      await continueAsNew<typeof tenantConsolidationWorkflow>({ tenant, subjectRefs: [...pending] });
    await sleep(PAUSE_BETWEEN_PASSES);
  }
}

/** Run by the consolidation Schedule: every tenant in turn. */
export async function consolidationSweepWorkflow(): Promise<ConsolidationSweepResult> {
  const result: ConsolidationSweepResult = { tenants: [] };
  for (const tenant of await consolidationTenants()) result.tenants.push(await consolidationWorkflow({ tenant }));
  return result;
}
