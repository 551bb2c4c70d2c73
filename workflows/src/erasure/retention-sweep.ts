import { ParentClosePolicy, executeChild, patched, proxyActivities } from '@temporalio/workflow';
import type { ErasureActivities } from '@elma/activities';
import { ElmaReason, ElmaRequestId, ElmaStatus, ElmaTenant } from '../search-attributes';
import { erasureWorkflowId, type ErasureInput, type RetentionSweepInput, type RetentionSweepResult } from './messages';
import { ACTIVITY_RETRY, HEARTBEAT_TIMEOUT } from '../retry';

const { retentionTenants, retentionOpen, erasureExpireWorksets } = proxyActivities<ErasureActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: ACTIVITY_RETRY,
});

/**
 * RetentionSweepWorkflow, run by a Temporal Schedule (hourly by default): for
 * each tenant with records past `expiresAt` and not on hold, one child
 * `erasureWorkflow` with reason `retention`, so each sweep yields one
 * certificate per tenant. A tenant whose erasure fails does not stop the others.
 * Then the worksets of erasures that never finished (terminated, lost) are
 * shredded once past their tenant's retention window.
 */
export async function retentionSweepWorkflow(input: RetentionSweepInput = {}): Promise<RetentionSweepResult> {
  const asOf = new Date().toISOString();
  const tenants = input.tenants ?? (await retentionTenants());
  const result: RetentionSweepResult = { asOf, erasures: [] };
  for (const tenant of tenants) {
    const requestId = `ret_${tenant}_${asOf.replace(/[-:.]/g, '')}`;
    if (!(await retentionOpen(tenant, requestId, asOf))) continue;
    const args: ErasureInput = { tenant, requestId, reason: 'retention' };
    try {
      const done = await executeChild('erasureWorkflow', {
        workflowId: erasureWorkflowId(tenant, requestId),
        args: [args],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: [
          { key: ElmaTenant, value: tenant },
          { key: ElmaRequestId, value: requestId },
          { key: ElmaReason, value: 'retention' },
          { key: ElmaStatus, value: 'running' },
        ],
      });
      result.erasures.push({ tenant, requestId, erased: (done as { erased: number }).erased });
    } catch {
      // The child's own status and failure say why (visible in the UI and in GET /v1/erasures/:id).
      result.erasures.push({ tenant, requestId, erased: null, failed: true });
    }
  }
  if (patched('retention-sweep-expires-worksets')) result.worksetsExpired = (await erasureExpireWorksets(asOf)).expired;
  return result;
}
