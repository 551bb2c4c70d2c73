import { parseArgs } from 'node:util';
import { loadConfig } from '@elma/infra';
import { runReindex } from '@elma/worker';

/** `elma rebuild --tenant T`: runs ReindexWorkflow on the Temporal server that `elma start` uses. */
export async function rebuildCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { tenant: { type: 'string' } } });
  if (!values.tenant) {
    process.stderr.write('usage: elma rebuild --tenant T\n');
    return 2;
  }
  const config = loadConfig();
  const address = config.temporal.address ?? `127.0.0.1:${config.temporal.port}`;
  const result = await runReindex({ address, tls: config.temporal.tls, namespace: config.temporal.namespace }, values.tenant);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}
