import { parseArgs } from 'node:util';
import { isTenantOffboardingEntry } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma } from '@elma/runtime';
import { claimEmbeddedEngines } from '../ownership';

/**
 * The erasure ledger, on the configured engines (not over the API). `reapply`
 * applies the ledger again, e.g. after an EventStoreDB or Elasticsearch
 * snapshot was restored outside ELMA; `--after N` starts after ledger entry N
 * (default: every entry; each is idempotent). `ledger`: the ledger's head and
 * whether a re-application is pending; `offboardings` counts the tenant
 * off-boardings among the entries. Counts only, no ids.
 */
export async function erasureLedgerCommand(action: 'reapply' | 'ledger', rest: string[], name = 'elma erasure'): Promise<number> {
  let values;
  try {
    values = parseArgs({ args: rest, options: { after: { type: 'string' } } }).values;
  } catch (error) {
    process.stderr.write(`${name}: ${(error as Error).message}\n`);
    return 2;
  }
  const after = values.after === undefined ? 0 : Number(values.after);
  if (!Number.isInteger(after) || after < 0) {
    process.stderr.write(`${name}: --after takes a ledger entry number (0 or more)\n`);
    return 2;
  }
  // Refuses a folder no ELMA has started: opening would create an empty ELMA there.
  const config = loadConfig(process.env, { secrets: 'existing' });
  const ownership = claimEmbeddedEngines(config, `${name} ${action}`, {});
  try {
    // Opening applies what a restore left pending (see openElma); `reapply` then goes over the ledger again.
    const elma = await openElma(config);
    try {
      if (action === 'ledger') {
        const offboardings = (await elma.erasure.ledger.entries(0)).filter(({ entry }) => isTenantOffboardingEntry(entry)).length;
        process.stdout.write(
          `${JSON.stringify({ ledger: config.erasureLedger, entries: await elma.erasure.ledger.head(), offboardings, pendingAfter: (await elma.erasure.ledger.pendingReapply()) ?? null })}\n`,
        );
        return 0;
      }
      const report = await elma.erasure.reapply.reapplyAll(after);
      await elma.index.flush();
      process.stdout.write(`${JSON.stringify(report)}\n`);
      return 0;
    } finally {
      await elma.close();
    }
  } finally {
    ownership?.release();
  }
}

/** `elma erasures reapply|status`: the older names of `elma erasure reapply|ledger`, kept for scripts. */
export async function erasuresCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'reapply' && action !== 'status') {
    process.stderr.write('usage: elma erasures reapply [--after N] | elma erasures status   (now: elma erasure reapply | ledger)\n');
    return 2;
  }
  return erasureLedgerCommand(action === 'status' ? 'ledger' : 'reapply', rest, 'elma erasures');
}
