import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { FORMAT_VERSIONS } from '@elma/domain';
import { reindexWorkflowId } from '@elma/workflows';
import { startReindex, type ElmaClientOptions } from './client';

/** The request id of the rebuild that brings a tenant's partition to a format version: one per tenant and version. */
export const formatRebuildRequestId = (indexRows: number = FORMAT_VERSIONS.indexRows) => `format-v${indexRows}`;

export interface FormatRebuilds {
  /** Workflow ids of the rebuilds started now. */
  started: string[];
  /** Workflow ids of rebuilds found running already (a restart during a rebuild). */
  running: string[];
}

/**
 * Starts ReindexWorkflow for each tenant whose index partition the format
 * check found older than this build's (or damaged): the partition is dropped
 * and rebuilt from the event log, and serves as it is (or, damaged, fails
 * loudly for that tenant only) until then. Returns at once. The workflow id
 * names the tenant and the format version, so a restart while a rebuild runs
 * finds it rather than starting a second one.
 */
export async function startFormatRebuilds(
  client: ElmaClientOptions,
  tenants: readonly string[],
  indexRows: number = FORMAT_VERSIONS.indexRows,
): Promise<FormatRebuilds> {
  const result: FormatRebuilds = { started: [], running: [] };
  const requestId = formatRebuildRequestId(indexRows);
  for (const tenant of tenants) {
    try {
      result.started.push((await startReindex(client, tenant, requestId)).workflowId);
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      result.running.push(reindexWorkflowId(tenant, requestId));
    }
  }
  return result;
}
