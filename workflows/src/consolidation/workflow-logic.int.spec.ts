import { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import type { ConsolidationActivities } from '@elma/activities';
import { suiteWorkflowEnv, argsOf, eventually, recording } from '../../../tests/support/workflow-env';
import { consolidateSubjectsSignal } from './messages';
import {
  SUBJECTS_PER_ACTIVITY,
  type consolidationSweepWorkflow,
  type consolidationWorkflow,
  type tenantConsolidationWorkflow,
} from './workflow';

const refs = (tenant: string, n: number) => Array.from({ length: n }, (_, i) => `${tenant}-rec-${i}`);

/**
 * Stubs of the consolidation activities over `subjects` (subject refs per tenant). A batch reports one view
 * created per subject it has not seen before, and one unchanged per subject seen already, as the real views
 * do on a rerun; refs starting `erased-` are skipped as erased.
 */
function stubs(subjects: Record<string, string[]>, overrides: Partial<ConsolidationActivities> = {}): ConsolidationActivities {
  const seen = new Set<string>();
  const consolidate = (refs: string[]) => {
    const result = { created: 0, unchanged: 0, skippedErased: 0, merges: 0, summaries: 0, facts: 0 };
    for (const ref of refs) {
      if (ref.startsWith('erased-')) result.skippedErased++;
      else if (seen.has(ref)) result.unchanged++;
      else {
        seen.add(ref);
        result.created++;
      }
    }
    return result;
  };
  return {
    consolidationTenants: async () => Object.keys(subjects),
    consolidationSubjects: async (tenant) => subjects[tenant] ?? [],
    consolidateSubject: async (_tenant, ref) => consolidate([ref]),
    consolidateSubjects: async (_tenant, refs) => consolidate(refs),
    ...overrides,
  };
}

describe('the consolidation workflows, with their activities stubbed', () => {
  const env = suiteWorkflowEnv();

  it(`consolidates every subject of a tenant once, ${SUBJECTS_PER_ACTIVITY} subjects per activity, in order`, async () => {
    const subjects = refs('acme', 2 * SUBJECTS_PER_ACTIVITY + 10);
    const { activities, calls } = recording(stubs({ acme: subjects }));
    const totals = await env.withWorker(activities, (client, taskQueue) =>
      client.workflow.execute<typeof consolidationWorkflow>('consolidationWorkflow', {
        taskQueue,
        workflowId: `consolidation-${taskQueue}`,
        args: [{ tenant: 'acme' }],
      }),
    );

    const batches = argsOf(calls, 'consolidateSubjects').map(([tenant, batch]) => [tenant, (batch as string[]).length]);
    expect(batches).toEqual([
      ['acme', SUBJECTS_PER_ACTIVITY],
      ['acme', SUBJECTS_PER_ACTIVITY],
      ['acme', 10],
    ]);
    expect(argsOf(calls, 'consolidateSubjects').flatMap(([, batch]) => batch as string[])).toEqual(subjects);
    expect(argsOf(calls, 'consolidateSubject')).toEqual([]);
    expect(totals).toEqual({ tenant: 'acme', subjects: subjects.length, created: subjects.length, unchanged: 0, skippedErased: 0 });
  });

  it('adds up what each batch created, found unchanged and skipped as erased, and a rerun creates nothing', async () => {
    const subjects = [...refs('acme', 30), 'erased-1', 'erased-2'];
    const { activities } = recording(stubs({ acme: subjects }));
    const [first, again] = await env.withWorker(activities, async (client, taskQueue) => {
      const run = (n: number) =>
        client.workflow.execute<typeof consolidationWorkflow>('consolidationWorkflow', {
          taskQueue,
          workflowId: `consolidation-${taskQueue}-${n}`,
          args: [{ tenant: 'acme' }],
        });
      return [await run(1), await run(2)];
    });

    expect(first).toEqual({ tenant: 'acme', subjects: 32, created: 30, unchanged: 0, skippedErased: 2 });
    expect(again).toEqual({ tenant: 'acme', subjects: 32, created: 0, unchanged: 30, skippedErased: 2 });
  });

  it('counts a batch once when its activity failed and was retried', async () => {
    const subjects = refs('acme', SUBJECTS_PER_ACTIVITY + 5);
    const base = stubs({ acme: subjects });
    const { activities, calls } = recording({
      ...base,
      consolidateSubjects: async (tenant: string, batch: string[]) => {
        // The second batch loses its first attempt after doing its work, as a worker crash would.
        const result = await base.consolidateSubjects(tenant, batch);
        if (batch.length === 5 && Context.current().info.attempt === 1) throw new Error('worker lost');
        return result;
      },
    });
    const totals = await env.withWorker(activities, (client, taskQueue) =>
      client.workflow.execute<typeof consolidationWorkflow>('consolidationWorkflow', {
        taskQueue,
        workflowId: `consolidation-${taskQueue}`,
        args: [{ tenant: 'acme' }],
      }),
    );

    expect(argsOf(calls, 'consolidateSubjects').map(([, batch]) => (batch as string[]).length)).toEqual([SUBJECTS_PER_ACTIVITY, 5, 5]);
    // The retry found the first attempt's views in place: they count as unchanged, the subjects once.
    expect(totals).toEqual({
      tenant: 'acme',
      subjects: SUBJECTS_PER_ACTIVITY + 5,
      created: SUBJECTS_PER_ACTIVITY,
      unchanged: 5,
      skippedErased: 0,
    });
  });

  it('consolidates only the subjects it is given, without listing the tenant', async () => {
    const { activities, calls } = recording(stubs({ acme: refs('acme', 40) }));
    const totals = await env.withWorker(activities, (client, taskQueue) =>
      client.workflow.execute<typeof consolidationWorkflow>('consolidationWorkflow', {
        taskQueue,
        workflowId: `consolidation-${taskQueue}`,
        args: [{ tenant: 'acme', subjectRefs: ['acme-rec-3', 'acme-rec-7'] }],
      }),
    );

    expect(calls.map((c) => c.name)).toEqual(['consolidateSubjects']);
    expect(argsOf(calls, 'consolidateSubjects')).toEqual([['acme', ['acme-rec-3', 'acme-rec-7']]]);
    expect(totals).toMatchObject({ subjects: 2, created: 2 });
  });

  it('does nothing for a malformed tenant id, and nothing for a tenant with no subjects', async () => {
    const { activities, calls } = recording(stubs({ acme: [] }));
    const [malformed, empty] = await env.withWorker(activities, async (client, taskQueue) => {
      const run = (tenant: string) =>
        client.workflow.execute<typeof consolidationWorkflow>('consolidationWorkflow', {
          taskQueue,
          workflowId: `consolidation-${taskQueue}-${tenant}`,
          args: [{ tenant }],
        });
      return [await run('../acme'), await run('acme')];
    });

    const zero = { subjects: 0, created: 0, unchanged: 0, skippedErased: 0 };
    expect(malformed).toEqual({ tenant: '../acme', ...zero });
    expect(empty).toEqual({ tenant: 'acme', ...zero });
    expect(calls.map((c) => c.name)).toEqual(['consolidationSubjects']);
  });

  it('sweeps every tenant in turn and reports each tenant’s totals', async () => {
    const { activities, calls } = recording(stubs({ acme: refs('acme', 3), globex: refs('globex', 30), initech: [] }));
    const result = await env.withWorker(activities, (client, taskQueue) =>
      client.workflow.execute<typeof consolidationSweepWorkflow>('consolidationSweepWorkflow', {
        taskQueue,
        workflowId: `sweep-${taskQueue}`,
      }),
    );

    expect(result.tenants.map((t) => [t.tenant, t.subjects, t.created])).toEqual([
      ['acme', 3, 3],
      ['globex', 30, 30],
      ['initech', 0, 0],
    ]);
    expect(argsOf(calls, 'consolidationSubjects').map(([tenant]) => tenant)).toEqual(['acme', 'globex', 'initech']);
    // Tenants run one after the other: a tenant's first batch comes after the previous tenant's last.
    expect(argsOf(calls, 'consolidateSubjects').map(([tenant]) => tenant)).toEqual(['acme', 'globex', 'globex']);
  });

  it('gathers the subjects signalled while a triggered pass runs into the next pass, each once', async () => {
    let finishFirstPass!: () => void;
    const firstPassHeld = new Promise<void>((resolve) => (finishFirstPass = resolve));
    const base = stubs({ acme: [] });
    const { activities, calls } = recording({
      ...base,
      consolidateSubjects: async (tenant: string, batch: string[]) => {
        if (calls.filter((c) => c.name === 'consolidateSubjects').length === 1) await firstPassHeld;
        return base.consolidateSubjects(tenant, batch);
      },
    });
    const passes = await env.withWorker(activities, async (client, taskQueue) => {
      const workflowId = `consolidate-acme-${taskQueue}`;
      const trigger = (refs: string[]) =>
        client.workflow.signalWithStart<typeof tenantConsolidationWorkflow, [string[]]>('tenantConsolidationWorkflow', {
          taskQueue,
          workflowId,
          args: [{ tenant: 'acme' }],
          signal: consolidateSubjectsSignal,
          signalArgs: [refs],
        });
      await trigger(['s1']);
      await eventually(() => calls.length === 1);
      // Triggers keep coming while the first pass runs, some for the same subjects.
      await trigger(['s2', 's3']);
      await trigger(['s3', 's1']);
      await trigger(['s4']);
      finishFirstPass();
      // The next pass starts after the pause between passes (5 s).
      await eventually(() => calls.length === 2, 15_000);
      await client.workflow.getHandle(workflowId).terminate('test done');
      return argsOf(calls, 'consolidateSubjects').map(([, batch]) => batch);
    });

    expect(passes).toEqual([['s1'], ['s2', 's3', 's1', 's4']]);
  });
});
