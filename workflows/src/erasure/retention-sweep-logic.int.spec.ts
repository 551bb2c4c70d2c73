import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import type { Attempted, ErasureActivities } from '@elma/activities';
import type { Verification } from '@elma/domain';
import { suiteWorkflowEnv, argsOf, names, recording } from '../../../tests/support/workflow-env';
import { ElmaReason, ElmaRequestId, ElmaTenant } from '../search-attributes';
import { ERASURE_REQUEST_ID_PATTERN, erasureProgressQuery } from './messages';
import type { retentionSweepWorkflow } from './retention-sweep';

const attempted = <T>(value: T): Attempted<T> => ({ value, attempt: Context.current().info.attempt });
const probe = { checked: 1, failed: 0, skipped: 0 };
const passed = (round: number): Verification => ({
  passed: true,
  getById: probe,
  bm25: probe,
  knn: probe,
  decrypt: probe,
  byteScan: { ...probe, files: 1, bytes: 1, paths: ['log/events.db'] },
  rounds: round,
});

/** Expired records per tenant, as the stubbed erasure service would count them. */
type Expired = Record<string, string[]>;

/**
 * Stubs of the erasure activities for a sweep: `retentionOpen` opens an erasure for a tenant with expired
 * records, and each child erasure erases that tenant's expired records; `refuse` makes a tenant's
 * authorisation fail for good.
 */
function stubs(expired: Expired, options: { refuse?: string[] } = {}): ErasureActivities {
  const records = (tenant: string) => ({ recordIds: expired[tenant] ?? [], eventIds: [] });
  return {
    erasureAuthorize: async (tenant) => {
      if (options.refuse?.includes(tenant))
        throw ApplicationFailure.create({ type: 'ERASURE.NOT_FOUND', message: 'no such request', nonRetryable: true });
      return attempted({ perRecord: false, approvalThreshold: 1_000, approvalTimeoutMs: 60_000 });
    },
    erasureLocate: async (tenant) => attempted({ seeds: records(tenant).recordIds }),
    erasureClosure: async (tenant) => attempted(records(tenant)),
    erasureLegalHoldCheck: async (_tenant, _requestId, closure) => attempted({ ...closure, held: [] }),
    erasureRecordApproval: async () => attempted(undefined),
    erasurePurgeIndex: async (_tenant, _requestId, set) => attempted({ purged: set.recordIds.length }),
    erasurePurgeCaches: async () => attempted({ evicted: 0 }),
    erasureShredKeys: async (_tenant, _requestId, set) => attempted({ shredded: set.recordIds.length }),
    erasureDeleteStreams: async () => attempted({ deleted: 1, shreddedInPlace: 0 }),
    erasureWriteTombstones: async () => attempted({ tombstones: 0 }),
    erasureVerify: async (_tenant, _requestId, _set, round) => attempted(passed(round)),
    erasureCertify: async (tenant) => attempted({ keyId: 'key-1', signature: `sig-${tenant}` }),
    erasureAbandon: async () => ({ shredded: true }),
    erasureExpireWorksets: async () => ({ expired: 2 }),
    retentionTenants: async () => Object.keys(expired),
    retentionOpen: async (tenant) => (expired[tenant] ?? []).length > 0,
  };
}

describe('retentionSweepWorkflow, with its activities stubbed', () => {
  const env = suiteWorkflowEnv();

  it('runs one child erasure, with reason retention, per tenant with expired records, then expires stale worksets', async () => {
    const { activities, calls } = recording(stubs({ acme: ['r1', 'r2'], globex: [], initech: ['r9'] }));
    const { result, children } = await env.withWorker(activities, async (client, taskQueue) => {
      const result = await client.workflow.execute<typeof retentionSweepWorkflow>('retentionSweepWorkflow', {
        taskQueue,
        workflowId: `retention-${taskQueue}`,
        args: [{}],
      });
      const children = await Promise.all(
        result.erasures.map(async ({ tenant, requestId }) => {
          const handle = client.workflow.getHandle(`erasure-${tenant}-${requestId}`);
          const described = await handle.describe();
          return {
            type: described.type,
            attributes: [ElmaTenant, ElmaRequestId, ElmaReason].map((key) => described.typedSearchAttributes.get(key)),
            progress: await handle.query(erasureProgressQuery),
          };
        }),
      );
      return { result, children };
    });

    expect(result.erasures).toEqual([
      { tenant: 'acme', requestId: expect.stringMatching(/^ret_acme_/), erased: 2 },
      { tenant: 'initech', requestId: expect.stringMatching(/^ret_initech_/), erased: 1 },
    ]);
    expect(result.worksetsExpired).toBe(2);
    // Every tenant is asked; only those with expired records get an erasure, each under its own request id.
    expect(argsOf(calls, 'retentionOpen').map(([tenant]) => tenant)).toEqual(['acme', 'globex', 'initech']);
    for (const [tenant, requestId, asOf] of argsOf(calls, 'retentionOpen')) {
      expect(requestId).toMatch(ERASURE_REQUEST_ID_PATTERN);
      expect(requestId).toBe(`ret_${tenant}_${String(asOf).replace(/[-:.]/g, '')}`);
      expect(asOf).toBe(result.asOf);
    }
    expect(argsOf(calls, 'erasureAuthorize').map(([tenant]) => tenant)).toEqual(['acme', 'initech']);
    expect(children.map((c) => c.type)).toEqual(['erasureWorkflow', 'erasureWorkflow']);
    expect(children.map((c) => c.attributes)).toEqual([
      ['acme', result.erasures[0].requestId, 'retention'],
      ['initech', result.erasures[1].requestId, 'retention'],
    ]);
    expect(children.map((c) => [c.progress.reason, c.progress.status])).toEqual([
      ['retention', 'completed'],
      ['retention', 'completed'],
    ]);
    // Stale worksets are expired after the children, as of the sweep's own time.
    expect(names(calls).at(-1)).toBe('erasureExpireWorksets');
    expect(argsOf(calls, 'erasureExpireWorksets')).toEqual([[result.asOf]]);
  });

  it('goes on with the other tenants when one tenant’s erasure fails, and reports it as failed', async () => {
    const { activities, calls } = recording(stubs({ acme: ['r1'], globex: ['g1', 'g2'], initech: ['i1'] }, { refuse: ['globex'] }));
    const result = await env.withWorker(activities, (client, taskQueue) =>
      client.workflow.execute<typeof retentionSweepWorkflow>('retentionSweepWorkflow', {
        taskQueue,
        workflowId: `retention-${taskQueue}`,
        args: [{}],
      }),
    );

    expect(result.erasures).toEqual([
      { tenant: 'acme', requestId: expect.any(String), erased: 1 },
      { tenant: 'globex', requestId: expect.any(String), erased: null, failed: true },
      { tenant: 'initech', requestId: expect.any(String), erased: 1 },
    ]);
    expect(argsOf(calls, 'erasureCertify').map(([tenant]) => tenant)).toEqual(['acme', 'initech']);
    expect(argsOf(calls, 'erasureAbandon').map(([tenant]) => tenant)).toEqual(['globex']);
    expect(names(calls).at(-1)).toBe('erasureExpireWorksets');
  });

  it('sweeps only the tenants it is given, without listing the others', async () => {
    const { activities, calls } = recording(stubs({ acme: ['r1'], globex: ['g1'] }));
    const result = await env.withWorker(activities, (client, taskQueue) =>
      client.workflow.execute<typeof retentionSweepWorkflow>('retentionSweepWorkflow', {
        taskQueue,
        workflowId: `retention-${taskQueue}`,
        args: [{ tenants: ['globex'] }],
      }),
    );

    expect(result.erasures.map((e) => e.tenant)).toEqual(['globex']);
    expect(names(calls)).not.toContain('retentionTenants');
    expect(argsOf(calls, 'retentionOpen').map(([tenant]) => tenant)).toEqual(['globex']);
  });

  it('starts no erasure when no tenant has expired records, and still expires stale worksets', async () => {
    const { activities, calls } = recording(stubs({ acme: [], globex: [] }));
    const result = await env.withWorker(activities, (client, taskQueue) =>
      client.workflow.execute<typeof retentionSweepWorkflow>('retentionSweepWorkflow', {
        taskQueue,
        workflowId: `retention-${taskQueue}`,
        args: [{}],
      }),
    );

    expect(result).toEqual({ asOf: expect.any(String), erasures: [], worksetsExpired: 2 });
    expect(names(calls)).toEqual(['retentionTenants', 'retentionOpen', 'retentionOpen', 'erasureExpireWorksets']);
  });
});
