import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as EsClient } from '@elastic/elasticsearch';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime, type WorkflowBundle } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FORMAT_VERSIONS, type Principal } from '@elma/domain';
import { ElasticsearchMemoryIndex, loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import type { ReindexResult } from '@elma/workflows';
import { startFormatRebuilds } from './format-rebuilds';
import { bundleElmaWorkflows, createElmaWorker } from './worker';

const URL = process.env.ELMA_ELASTICSEARCH_URL;
const principal: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };

/**
 * The Elasticsearch index's mapping version, on a real node: a tenant whose
 * index is of an older mapping is rebuilt beside it by ReindexWorkflow (alias
 * swap) on a real Temporal dev server; one of a newer mapping stops the open.
 * Runs when ELMA_ELASTICSEARCH_URL names a node (scripts/start-elasticsearch.mjs).
 */
describe.skipIf(!URL)('Elasticsearch mapping versions', () => {
  const address = inject('temporalAddress') ?? process.env.TEMPORAL_ADDRESS;
  const namespace = inject('temporalNamespace') ?? 'default';
  const esNamespace = `fmt${Date.now() % 1_000_000}`;
  // Made in beforeAll: a skipped suite is still collected, and must leave no folder behind.
  let dir: string;
  let env: Record<string, string>;
  let es: EsClient;
  let connection: Connection;
  let bundle: WorkflowBundle;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'elma-format-es-'));
    env = { ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir, ELMA_ELASTICSEARCH_URL: URL!, ELMA_ES_NAMESPACE: esNamespace };
    es = new EsClient({ node: URL! });
    const logger = new DefaultLogger('ERROR');
    try {
      Runtime.install({ logger });
    } catch {
      // Installed by another spec in this process.
    }
    bundle = (await bundleElmaWorkflows({ logger })) as WorkflowBundle;
    connection = await Connection.connect({ address });
  });
  afterAll(async () => {
    await es?.indices.delete({ index: `${esNamespace}-*`, allow_no_indices: true, ignore_unavailable: true, expand_wildcards: 'all' });
    await es?.close();
    await connection?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const concreteIndex = async () => Object.keys(await es.indices.getAlias({ name: `${esNamespace}-acme-memories` }))[0]!;
  const recallTexts = async (elma: Elma, query: string) =>
    (await elma.recall.recall(principal, { query, purpose: 'support', budgetTokens: 2000 })).items.map((i) => i.text);

  it('an index of an older mapping is rebuilt beside the live one; one of a newer mapping refuses the open, naming it', async () => {
    // Given a tenant indexed by this build,
    let elma = await openElma(loadConfig(env), { logger: silentLogger });
    try {
      await elma.runner.start();
      const { position } = await elma.ingest.ingest(principal, {
        events: [
          {
            subject: 'cust-1',
            occurredAt: '2026-11-20T10:00:00Z',
            activity: 'chat.turn',
            content: { text: '客户询问了托盘发票' },
            source: { system: 'crm', externalId: 'es-1' },
            purposes: ['support'],
          },
        ],
      });
      await elma.runner.waitFor(BigInt(position));
      expect(elma.formats.rebuild).toEqual([]);
    } finally {
      await elma.close();
    }
    // whose index an older build made (its recorded mapping version one lower),
    const old = await concreteIndex();
    await es.indices.putMapping({ index: old, _meta: { mapping_version: FORMAT_VERSIONS.elasticsearchMapping - 1 } });

    // when this build opens it, the tenant is rebuilt through ReindexWorkflow beside it, and recall answers;
    elma = await openElma(loadConfig(env), { logger: silentLogger });
    const taskQueue = `elma-format-es-${Date.now()}`;
    const worker = await createElmaWorker({ address, namespace, taskQueue, deps: { views: elma.views }, workflowBundle: bundle });
    const running = worker.run();
    try {
      await elma.runner.start();
      expect(elma.formats.rebuild).toEqual(['acme']);
      const { started } = await startFormatRebuilds({ connection, namespace, taskQueue }, elma.formats.rebuild);
      const result = (await new Client({ connection, namespace }).workflow.getHandle(started[0]!).result()) as ReindexResult;
      expect(result.swap).toMatchObject({ from: old });
      expect(result.swap?.to).toContain(`-memories-v${FORMAT_VERSIONS.elasticsearchMapping}-r`);
      expect(await (elma.index as ElasticsearchMemoryIndex).mappingVersions()).toEqual([
        { tenant: 'acme', index: result.swap!.to, version: FORMAT_VERSIONS.elasticsearchMapping },
      ]);
      expect(await recallTexts(elma, '托盘发票')).toContain('客户询问了托盘发票');
    } finally {
      await worker.shutdown();
      await running;
      await elma.close();
    }

    // and when an index says a newer mapping, the open is refused, naming the index and both versions.
    const current = await concreteIndex();
    await es.indices.putMapping({ index: current, _meta: { mapping_version: FORMAT_VERSIONS.elasticsearchMapping + 1 } });
    await expect(openElma(loadConfig(env), { logger: silentLogger })).rejects.toThrow(
      `ELMA cannot open the Elasticsearch indices of namespace ${esNamespace}; nothing in it was changed:\n` +
        `  - ${current}: elasticsearchMapping format version ${FORMAT_VERSIONS.elasticsearchMapping + 1}, newer than this build reads (${FORMAT_VERSIONS.elasticsearchMapping})`,
    );
  });
});
