import { parseArgs } from 'node:util';
import { loadDataPaths, RESTORE_STEPS, restoreDataDir, type RestoreStep } from '@elma/infra';

/**
 * `elma restore --from B`: verifies the backup whole, then restores it into a
 * data folder no process owns; the erasure ledger is kept and tells the next
 * start which erasures to apply again. Exit 1, with nothing changed, on a
 * backup that does not verify, a folder in use or a refusal.
 */
export async function restoreCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      from: { type: 'string' },
      'data-dir': { type: 'string' },
      'without-ledger': { type: 'boolean', default: false },
      'accept-ledger-loss': { type: 'boolean', default: false },
    },
  });
  if (!values.from) {
    process.stderr.write('elma restore: --from <backup folder> is required\n');
    return 2;
  }
  const paths = loadDataPaths(values['data-dir'] ? { ...process.env, ELMA_DATA_DIR: values['data-dir'] } : process.env);
  try {
    const result = await restoreDataDir({
      from: values.from,
      dataDir: paths.dataDir,
      ledgerPath: paths.erasureLedger,
      ledgerReplicaPath: paths.erasureLedgerReplica,
      temporalDbFile: paths.temporalDbFile,
      withoutLedger: values['without-ledger'],
      acceptLedgerLoss: values['accept-ledger-loss'],
      certificateKeysFile: paths.certificateKeysFile,
      pause: pauseForTests(process.env.ELMA_TEST_RESTORE_PAUSE),
    });
    for (const warning of result.warnings) process.stderr.write(`elma restore: WARNING: ${warning}\n`);
    process.stdout.write(
      `${JSON.stringify({
        restored: paths.dataDir,
        takenAt: result.manifest.takenAt,
        eventLogPosition: result.manifest.eventLogPosition ?? null,
        files: result.manifest.files.length,
        erasuresToReapply: result.reapply ? result.reapply.entries - result.reapply.offboardings : null,
        offboardingsToReapply: result.reapply?.offboardings ?? null,
        kept: result.kept,
      })}\n`,
    );
    if (result.reapply && result.reapply.entries > 0) {
      const { entries, offboardings } = result.reapply;
      process.stderr.write(
        `elma restore: ${entries - offboardings} erasure(s) and ${offboardings} tenant off-boarding(s) completed after the backup are applied again when ELMA next starts, before it serves. ` +
          'Until then the folder holds their content again: `elma erasure reapply` applies them now.\n',
      );
    }
    return 0;
  } catch (error) {
    process.stderr.write(`elma restore: ${(error as Error).message}\n`);
    return 1;
  }
}

/**
 * Test only (the restore kill tests, restore-kill.faults.spec.ts): `ELMA_TEST_RESTORE_PAUSE=<step>` stops the
 * restore at that step of RESTORE_STEPS, says so on stderr and waits there for ever, to be killed.
 */
function pauseForTests(step: string | undefined): ((at: RestoreStep) => Promise<void>) | undefined {
  if (!step) return undefined;
  if (!(RESTORE_STEPS as readonly string[]).includes(step))
    throw new Error(`ELMA_TEST_RESTORE_PAUSE must be one of ${RESTORE_STEPS.join(', ')}`);
  return async (at) => {
    if (at !== step) return;
    process.stderr.write(`elma restore: paused at ${at} (ELMA_TEST_RESTORE_PAUSE)\n`);
    await new Promise(() => setInterval(() => undefined, 60_000));
  };
}
