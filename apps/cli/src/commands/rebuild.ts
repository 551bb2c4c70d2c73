import { parseArgs } from 'node:util';
import { lastDataDirOwner, loadConfig, type DataDirOwnerInfo, type ElmaConfig } from '@elma/infra';
import { runReindex } from '@elma/worker';

/** `elma rebuild --tenant T`: runs ReindexWorkflow on the Temporal server that `elma start` uses. */
export async function rebuildCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { tenant: { type: 'string' } } });
  if (!values.tenant) {
    process.stderr.write('usage: elma rebuild --tenant T\n');
    return 2;
  }
  const config = loadConfig();
  const address = temporalAddressOf(config, process.env, lastDataDirOwner(config.dataDir));
  try {
    // On the task queue the workers poll (TEMPORAL_TASK_QUEUE), as `elma start` and `elma worker` do.
    const result = await runReindex(
      { address, tls: config.temporal.tls, namespace: config.temporal.namespace, taskQueue: config.temporal.taskQueue },
      values.tenant,
    );
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (!/connect/i.test(error instanceof Error ? error.message : '')) throw error;
    process.stderr.write(
      `elma rebuild: no Temporal server answers at ${address}; start ELMA (npm start), or set TEMPORAL_ADDRESS (or TEMPORAL_PORT)\n`,
    );
    return 1;
  }
}

/**
 * Where the rebuild finds Temporal: TEMPORAL_ADDRESS, else an explicit
 * TEMPORAL_PORT, else the dev server of the `elma start` that owns (or last
 * owned) the data folder, as it recorded in owner.json, so the command works
 * unchanged next to an `npm start` on other ports; else the default port.
 */
export function temporalAddressOf(config: ElmaConfig, env: NodeJS.ProcessEnv, owner: DataDirOwnerInfo | undefined): string {
  if (config.temporal.address) return config.temporal.address;
  const port =
    env.TEMPORAL_PORT === undefined && owner?.command === 'elma start' && owner.ports.temporal
      ? owner.ports.temporal
      : config.temporal.port;
  return `127.0.0.1:${port}`;
}
