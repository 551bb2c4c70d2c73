import { z } from 'zod';
import { DomainError } from '../shared/errors';
import { FORMAT_VERSIONS } from '../shared/formats';

/**
 * A file's path inside a backup: one or two plain segments (`events.db`,
 * `index/tenant-acme.db`), so a manifest can never name a file outside the
 * folder it is restored into.
 */
const BackupPath = z.string().regex(/^(index\/)?[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/, 'a file of the data folder or of its index folder');

export const BackupFile = z.strictObject({
  path: BackupPath,
  bytes: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type BackupFile = z.infer<typeof BackupFile>;

/** `manifest.json` of a backup made by `elma backup`. */
export const BackupManifest = z.strictObject({
  type: z.literal('elma.backup'),
  formatVersion: z.literal(FORMAT_VERSIONS.backupManifest),
  elmaVersion: z.string(),
  /** When the copy started and ended: the snapshot holds the data of a moment between them. */
  startedAt: z.iso.datetime({ offset: true }),
  takenAt: z.iso.datetime({ offset: true }),
  /** The event log's last position in the copy (decimal string), absent when the log is not embedded. */
  eventLogPosition: z.string().regex(/^\d+$/).optional(),
  /**
   * The erasure ledger as it stood before the copy started: entries after `head` may postdate the data
   * and are applied again on restore (all of them when the ledger is another one).
   */
  ledger: z
    .strictObject({
      id: z.string(),
      head: z.number().int().min(0),
      /** The ledger's hash chain at `head` (see `LedgerMark`): a restore refuses a ledger whose first entries differ. */
      chain: z
        .string()
        .regex(/^[0-9a-f]{64}$/)
        .optional(),
    })
    .nullable(),
  /** Whether master.key and jwt.secret are in the backup. */
  secrets: z.boolean(),
  files: z.array(BackupFile),
  /** What is not in the backup and is rebuilt on the first start (e.g. the index's vector graphs, from the rows). */
  rebuiltOnStart: z.array(z.string()),
});
export type BackupManifest = z.infer<typeof BackupManifest>;

/** A backup that cannot be restored as it is (manifest missing or unreadable, a file missing or altered). Nothing was changed. */
export class BackupInvalid extends DomainError {
  constructor(reason: string) {
    super('BACKUP.INVALID', `the backup cannot be restored: ${reason}. Nothing was changed.`, { reason });
  }
}

/** `elma backup` refused before it copied anything (no data folder, a target that is not new). */
export class BackupRefused extends DomainError {
  constructor(reason: string) {
    super('BACKUP.REFUSED', `backup refused: ${reason}`, { reason });
  }
}

/** Restore refused before anything was changed (a secret that differs, no ledger...). */
export class RestoreRefused extends DomainError {
  constructor(reason: string) {
    super('BACKUP.RESTORE_REFUSED', `restore refused: ${reason}. Nothing was changed.`, { reason });
  }
}

/** A restore stopped half way (the marker it leaves until the files are all in place is still there). ELMA does not start on such a folder. */
export class RestoreInterrupted extends DomainError {
  constructor(dataDir: string) {
    super(
      'BACKUP.RESTORE_INTERRUPTED',
      `a restore into ${dataDir} did not finish: run the same 'elma restore' again before starting ELMA.`,
      { dataDir },
    );
  }
}

/** The marker file a restore keeps in the data folder while it swaps files. */
export const RESTORE_MARKER_FILE = '.restore-in-progress';
