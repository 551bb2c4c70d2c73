import { parseArgs } from 'node:util';
import { backupDataDir, loadDataPaths } from '@elma/infra';
import { ELMA_VERSION } from '@elma/shared';

/**
 * `elma backup --to B`: a consistent copy of the embedded engines' files
 * (SQLite online backup), taken while ELMA runs or not. The erasure ledger is
 * never copied; master.key and jwt.secret only with `--include-secrets`.
 * Prints a JSON summary (counts, positions, no content).
 */
export async function backupCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { to: { type: 'string' }, 'data-dir': { type: 'string' }, 'include-secrets': { type: 'boolean', default: false } },
  });
  if (!values.to) {
    process.stderr.write('elma backup: --to <folder> is required (a folder that does not exist yet)\n');
    return 2;
  }
  const paths = loadDataPaths(values['data-dir'] ? { ...process.env, ELMA_DATA_DIR: values['data-dir'] } : process.env);
  try {
    const result = await backupDataDir({
      dataDir: paths.dataDir,
      to: values.to,
      ledgerPath: paths.erasureLedger,
      ledgerReplicaPath: paths.erasureLedgerReplica,
      temporalDbFile: paths.temporalDbFile,
      includeSecrets: values['include-secrets'],
      elmaVersion: ELMA_VERSION,
    });
    const { manifest } = result;
    if (manifest.secrets) {
      process.stderr.write(
        'elma backup: WARNING: the backup holds master.key and jwt.secret: whoever reads it can decrypt it and mint tokens. ' +
          'Keep it apart from the data and encrypted at rest.\n',
      );
    } else {
      process.stderr.write('elma backup: the backup holds no master key: keep ELMA_MASTER_KEY (or master.key) safe, a restore needs it.\n');
    }
    process.stdout.write(
      `${JSON.stringify({
        backup: result.path,
        takenAt: manifest.takenAt,
        eventLogPosition: manifest.eventLogPosition ?? null,
        ledgerHead: manifest.ledger?.head ?? null,
        files: manifest.files.length,
        bytes: manifest.files.reduce((sum, f) => sum + f.bytes, 0),
        secrets: manifest.secrets,
        rebuiltOnStart: manifest.rebuiltOnStart,
        notCopied: result.skipped,
      })}\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(`elma backup: ${(error as Error).message}\n`);
    return 1;
  }
}
