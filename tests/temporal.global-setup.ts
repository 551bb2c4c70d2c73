import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startTemporalDevServer } from '../infra/src/temporal/dev-server';
import { bundleElmaWorkflows } from '../apps/worker/src/worker';
import { ELMA_SEARCH_ATTRIBUTES } from '../workflows/src/search-attributes';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Temporal front-end for int tests, `host:port`. */
    temporalAddress: string;
    temporalNamespace: string;
    /** ELMA's workflows bundled once for the run (a file), for the workers the tests start; see `testWorkflowBundle`. */
    workflowBundlePath: string;
  }
}

/**
 * One Temporal dev server for the whole test run (headless, free ports, a throwaway SQLite file), unless
 * TEMPORAL_ADDRESS already points at a server. Tests read the address with `inject('temporalAddress')`;
 * it is also set as TEMPORAL_ADDRESS, which the forked test workers inherit.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const external = process.env.TEMPORAL_ADDRESS;
  const dir = await mkdtemp(join(tmpdir(), 'elma-temporal-'));
  // Bundling takes seconds of CPU: once here, not once per test file or worker (the bundle is the same for all).
  const bundleStarted = Date.now();
  const workflowBundlePath = join(dir, 'workflow-bundle.js');
  await writeFile(workflowBundlePath, (await bundleElmaWorkflows()).code);
  process.stderr.write(`[elma] ELMA's workflows bundled for the run in ${Date.now() - bundleStarted} ms\n`);
  project.provide('workflowBundlePath', workflowBundlePath);
  if (external) {
    project.provide('temporalAddress', external);
    project.provide('temporalNamespace', namespace);
    return () => rm(dir, { recursive: true, force: true });
  }

  const server = await startTemporalDevServer({
    headless: true,
    namespace,
    dbFile: join(dir, 'temporal.db'),
    searchAttributes: ELMA_SEARCH_ATTRIBUTES,
  });
  process.stderr.write(`[elma] Temporal dev server at ${server.address} (started in ${server.startupMs} ms)\n`);
  process.env.TEMPORAL_ADDRESS = server.address;
  // Erasure verification byte-scans the Temporal database too (workflow histories must hold no content).
  process.env.ELMA_TEMPORAL_DB_FILE = join(dir, 'temporal.db');
  project.provide('temporalAddress', server.address);
  project.provide('temporalNamespace', namespace);

  return async () => {
    delete process.env.TEMPORAL_ADDRESS;
    delete process.env.ELMA_TEMPORAL_DB_FILE;
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
