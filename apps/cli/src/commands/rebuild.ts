import { parseArgs } from 'node:util';
import { lastDataDirOwner, loadTemporalConfig } from '@elma/infra';
import { runReindex } from '@elma/worker';
import { startProgress } from '../progress';
import { rethrowUnreachable, temporalTargetOf } from '../temporal-target';

/**
 * `elma rebuild --tenant T`: runs ReindexWorkflow on the Temporal server that `elma start` uses (see
 * `temporalTargetOf`). The result is JSON on stdout; the stages go by on stderr.
 */
export async function rebuildCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { tenant: { type: 'string' } } });
  if (!values.tenant) {
    process.stderr.write('usage: elma rebuild --tenant T\n');
    return 2;
  }
  const config = loadTemporalConfig();
  const target = temporalTargetOf(config, process.env, lastDataDirOwner(config.dataDir));
  const progress = startProgress({ label: `rebuild ${values.tenant}` });
  try {
    // On the task queue the workers poll (TEMPORAL_TASK_QUEUE), as `elma start` and `elma worker` do.
    const result = await runReindex(target, values.tenant, undefined, (stage) => progress.note(stage));
    progress.finish('done');
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    progress.finish('stopped');
    rethrowUnreachable(error, target.address);
  }
}
