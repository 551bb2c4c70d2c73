import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime, type WorkflowBundle } from '@temporalio/worker';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { analysisCodeAt, DEFAULT_TEXT_ANALYSIS, FORMAT_VERSIONS, type FormatVersions, type Principal } from '@elma/domain';
import { loadConfig, readSqliteHeader } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import type { ReindexResult } from '@elma/workflows';
import { startFormatRebuilds } from './format-rebuilds';
import { bundleElmaWorkflows, createElmaWorker } from './worker';

/** Written before subject pseudonyms and format versions (tests/fixtures/README.md): partitions at version 0. */
const FIXTURE = join(__dirname, '../../../tests/fixtures/pre-pseudonyms');

const principal = (tenant: string): Principal => ({
  tenant,
  sub: 'agent-1',
  roles: ['agent'],
  purposes: ['support'],
  clearance: 'internal',
});

/**
 * An upgrade that changes the index format: the partitions of the version
 * before are rebuilt from the log by ReindexWorkflow on a real Temporal dev
 * server, while recall keeps answering, and come out stamped with the new
 * version. Real files, real worker, real workflow.
 */
describe('index partitions of an older format, rebuilt through ReindexWorkflow', () => {
  const address = inject('temporalAddress') ?? process.env.TEMPORAL_ADDRESS;
  const namespace = inject('temporalNamespace') ?? 'default';
  let bundle: WorkflowBundle;
  let connection: Connection;
  const cleanups: (() => Promise<unknown> | unknown)[] = [];

  beforeAll(async () => {
    if (!address) throw new Error('no Temporal server: run with the tests/temporal.global-setup.ts globalSetup or set TEMPORAL_ADDRESS');
    const logger = new DefaultLogger('ERROR');
    try {
      Runtime.install({ logger });
    } catch {
      // Another spec in this process already installed the runtime.
    }
    bundle = (await bundleElmaWorkflows({ logger })) as WorkflowBundle;
    connection = await Connection.connect({ address });
  });
  afterAll(async () => {
    await connection?.close();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const folder = () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-format-rebuild-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };

  /** ELMA open on the folder as a build with `formats` would open it, its projection running and a worker serving its views. */
  async function serve(dir: string, formats: FormatVersions = FORMAT_VERSIONS): Promise<{ elma: Elma; taskQueue: string }> {
    const elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir }), { logger: silentLogger, formats });
    await elma.runner.start();
    const taskQueue = `elma-format-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const worker = await createElmaWorker({ address, namespace, taskQueue, deps: { views: elma.views }, workflowBundle: bundle });
    const running = worker.run();
    cleanups.push(async () => {
      await worker.shutdown();
      await running;
      await elma.close();
    });
    return { elma, taskQueue };
  }

  const results = (workflowIds: string[]) =>
    Promise.all(workflowIds.map((id) => new Client({ connection, namespace }).workflow.getHandle(id).result() as Promise<ReindexResult>));

  const recallTexts = async (elma: Elma, tenant: string, query: string) =>
    (await elma.recall.recall(principal(tenant), { query, purpose: 'support', budgetTokens: 2000 })).items.map((i) => i.text);

  const version = (path: string) => {
    const header = readSqliteHeader(path);
    return header.kind === 'sqlite' ? header.userVersion : header.kind;
  };

  it('the fixture from before versions: every tenant rebuilt, recall answering during and after, partitions stamped', async () => {
    const dir = folder();
    cpSync(FIXTURE, dir, { recursive: true });
    const { elma, taskQueue } = await serve(dir);
    expect(elma.formats.rebuild).toEqual(['acme', 'globex']);

    const rebuilds = await startFormatRebuilds({ connection, namespace, taskQueue }, elma.formats.rebuild);
    expect(rebuilds.started).toEqual(['acme', 'globex'].map((t) => `reindex-${t}-format-v${FORMAT_VERSIONS.indexRows}`));
    // While the rebuilds run, recall answers (from the old partition, or the one being replayed).
    const during = await recallTexts(elma, 'globex', 'renewal contract');
    expect(Array.isArray(during)).toBe(true);

    const done = await results(rebuilds.started);
    // Per tenant: its ingested events and memory events, as many records as before (held records included).
    expect(done.map((r) => [r.tenant, r.memories])).toEqual([
      ['acme', 3],
      ['globex', 1],
    ]);
    expect(await recallTexts(elma, 'acme', '仓库托盘')).toContain('询问了仓库的托盘运输');
    expect(await recallTexts(elma, 'globex', 'renewal contract')).toContain('renewal of the support contract');
    expect(version(join(dir, 'index/tenant-acme.db'))).toBe(FORMAT_VERSIONS.indexRows);
    expect(version(join(dir, 'index/tenant-globex.db'))).toBe(FORMAT_VERSIONS.indexRows);

    // The next start has nothing left to rebuild.
    await cleanups.pop()!();
    const again = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir }), { logger: silentLogger });
    try {
      expect(again.formats).toEqual({ refuse: [], rebuild: [], migrate: [] });
    } finally {
      await again.close();
    }
  });

  it('a build one indexRows and one tokenisation version ahead: rebuilt and re-derived, and the build before then refuses the folder', async () => {
    const dir = folder();
    // Given a folder written by this build,
    {
      const { elma } = await serve(dir);
      const { position } = await elma.ingest.ingest(principal('acme'), {
        events: [
          {
            subject: 'cust-1',
            occurredAt: '2026-11-20T10:00:00Z',
            activity: 'chat.turn',
            content: { text: 'The customer asked about the pallet invoice' },
            source: { system: 'crm', externalId: 'a-1' },
            purposes: ['support'],
          },
          {
            subject: 'cust-1',
            occurredAt: '2026-11-21T10:00:00Z',
            activity: 'chat.turn',
            content: { text: '客户询问了托盘发票' },
            source: { system: 'crm', externalId: 'a-2' },
            purposes: ['support'],
          },
        ],
      });
      await elma.runner.waitFor(BigInt(position));
      await cleanups.pop()!();
    }
    const next = { ...FORMAT_VERSIONS, indexRows: FORMAT_VERSIONS.indexRows + 1, tokenisation: FORMAT_VERSIONS.tokenisation + 1 };

    // when the next build opens it,
    const { elma, taskQueue } = await serve(dir, next);
    expect(elma.formats.rebuild).toEqual(['acme']);
    const rebuilds = await startFormatRebuilds({ connection, namespace, taskQueue }, elma.formats.rebuild, next.indexRows);
    expect(rebuilds.started).toEqual([`reindex-acme-format-v${next.indexRows}`]);
    const [done] = await results(rebuilds.started);

    // then the partition is rebuilt in the new format, its terms derived by the new tokenisation, and recall answers.
    expect(done).toMatchObject({ tenant: 'acme', memories: 2 });
    expect(version(join(dir, 'index/tenant-acme.db'))).toBe(next.indexRows);
    expect(await recallTexts(elma, 'acme', 'pallet invoice')).toContain('The customer asked about the pallet invoice');
    expect(await recallTexts(elma, 'acme', '托盘发票')).toContain('客户询问了托盘发票');
    await elma.index.flush();
    const db = new Database(join(dir, 'index/tenant-acme.db'), { readonly: true, fileMustExist: true });
    try {
      const code = db.prepare(`SELECT value FROM partition_state WHERE key = 'text_analysis'`).pluck().get();
      expect(code).toBe(analysisCodeAt(DEFAULT_TEXT_ANALYSIS, next.tokenisation));
    } finally {
      db.close();
    }
    await cleanups.pop()!();

    // And the build before refuses the folder rather than misread the newer partition.
    await expect(openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir }), { logger: silentLogger })).rejects.toThrow(
      `  - index/tenant-acme.db: indexRows format version ${next.indexRows}, newer than this build reads (${FORMAT_VERSIONS.indexRows})`,
    );
  });
});
