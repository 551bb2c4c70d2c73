import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { ELMA_TASK_QUEUE, ElmaTenant, type ReindexResult, type reindexWorkflow } from '@elma/workflows';

export interface ElmaClientOptions {
  /** An open connection to reuse; otherwise one is opened to `address` and closed afterwards. */
  connection?: Connection;
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

/** Business workflow id: `reindex-<tenant>-<requestId>`. */
export function reindexWorkflowId(tenant: string, requestId: string): string {
  return `reindex-${tenant}-${requestId}`;
}

/** Starts a reindex of the tenant's views and returns its ids without waiting. */
export async function startReindex(
  options: ElmaClientOptions,
  tenant: string,
  requestId: string = randomUUID(),
): Promise<{ workflowId: string; runId: string }> {
  return withClient(options, async (client) => {
    const handle = await client.workflow.start<typeof reindexWorkflow>('reindexWorkflow', {
      taskQueue: options.taskQueue ?? ELMA_TASK_QUEUE,
      workflowId: reindexWorkflowId(tenant, requestId),
      args: [{ tenant }],
      typedSearchAttributes: [{ key: ElmaTenant, value: tenant }],
    });
    return { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
  });
}

/** Reindexes the tenant's views and waits for the result; a failed workflow rejects with `WorkflowFailedError`. */
export async function runReindex(options: ElmaClientOptions, tenant: string, requestId: string = randomUUID()): Promise<ReindexResult> {
  return withClient(options, async (client) => {
    return client.workflow.execute<typeof reindexWorkflow>('reindexWorkflow', {
      taskQueue: options.taskQueue ?? ELMA_TASK_QUEUE,
      workflowId: reindexWorkflowId(tenant, requestId),
      args: [{ tenant }],
      typedSearchAttributes: [{ key: ElmaTenant, value: tenant }],
    });
  });
}

async function withClient<T>(options: ElmaClientOptions, use: (client: Client) => Promise<T>): Promise<T> {
  const connection = options.connection ?? (await Connection.connect({ address: options.address }));
  try {
    return await use(new Client({ connection, namespace: options.namespace ?? 'default' }));
  } finally {
    if (!options.connection) await connection.close();
  }
}
