import { loadConfig } from '@elma/infra';
import { openElma } from '@elma/runtime';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { configuredWorkerOptions, createWorkerFor, prebuiltWorkflowBundle } from '@elma/worker';
import { claimEmbeddedEngines } from '../ownership';
import { rethrowUnreachable, temporalTargetOf } from '../temporal-target';

/**
 * `elma worker`: a Temporal worker alone (erasure, retention, reindex, consolidation), on the
 * engines the configuration names, against TEMPORAL_ADDRESS. It runs no API
 * and no projection. With the embedded engines, prefer `elma start`, which
 * keeps the index's in-memory vector graph in one process; a separate worker
 * is for the production engines, or for tests that kill it mid-workflow. Temporal is found as by every
 * command (`temporalTargetOf`), except that a worker never guesses: TEMPORAL_ADDRESS or TEMPORAL_PORT must say.
 */
export async function workerCommand(_argv: string[]): Promise<number> {
  const config = loadConfig();
  if (!config.temporal.address && !process.env.TEMPORAL_PORT) {
    process.stderr.write('elma worker needs TEMPORAL_ADDRESS (host:port of the Temporal front-end), or TEMPORAL_PORT on this machine\n');
    return 2;
  }
  const { address } = temporalTargetOf(config, process.env, undefined);
  const ownership = claimEmbeddedEngines(config, 'elma worker', {});
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const elma = await openElma(config);
  let worker;
  try {
    worker = await createWorkerFor(elma, configuredWorkerOptions(config, address));
  } catch (error) {
    await elma.close();
    ownership?.release();
    rethrowUnreachable(error, address);
  }
  const stop = async () => {
    await worker.shutdown();
    await elma.close();
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  const prebuilt = prebuiltWorkflowBundle();
  if (prebuilt) process.stderr.write(`[elma] workflows from the build: ${prebuilt.codePath}\n`);
  process.stderr.write(`[elma] worker polling ${address}\n`);
  await worker.run();
  await elma.close();
  ownership?.release();
  return 0;
}
