import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { closeSync, copyFileSync, fsyncSync, openSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import {
  BackupInvalid,
  BackupManifest,
  BackupRefused,
  ErasureLedgerIncomplete,
  FORMAT_VERSIONS,
  isTenantOffboardingEntry,
  ledgerGap,
  SignedLedgerHead,
  streams,
  type ErasureLedger,
  type LedgerMark,
  RESTORE_MARKER_FILE,
  RestoreRefused,
  type BackupFile,
} from '@elma/domain';
import { claimDataDir, OWNER_INFO_FILE, OWNER_LOCK_FILE } from '../files/data-dir-owner';
import { RESTORE_STAGING_PREFIX } from '../files/leftovers';
import { OWNER_ONLY } from '../files/owner-only';
import { ERASURE_LEDGER_FILE } from '../erasure-ledger/sqlite-erasure-ledger';
import { openErasureLedger } from '../erasure-ledger/replicated-erasure-ledger';
import { lastEventData, SqliteEventLog } from '../event-log/sqlite/sqlite-event-log';

export const MANIFEST_FILE = 'manifest.json';
const SECRET_FILES = ['master.key', 'jwt.secret'] as const;
/** The index's vector graphs: not copied (a copy taken beside a writer could be torn); rebuilt from the rows on open. */
const GRAPH_SUFFIX = '.usearch';
const COMPANIONS = ['-wal', '-shm', '-journal'];

/** The data folder's own files that never go into a backup, and that a restore never touches. */
function neverCopied(dataDir: string, ledgerPath: string, temporalDbFile?: string): Set<string> {
  const names = new Set([OWNER_LOCK_FILE, OWNER_INFO_FILE, ERASURE_LEDGER_FILE, 'temporal.db', 'temporal.pid', RESTORE_MARKER_FILE]);
  for (const path of [ledgerPath, temporalDbFile]) if (path && dirname(resolve(path)) === resolve(dataDir)) names.add(basename(path));
  return names;
}

const isCompanion = (name: string) => COMPANIONS.some((suffix) => name.endsWith(suffix));

/** The SQLite files of the data folder a backup copies, in the order that keeps the copy consistent. */
function engineFiles(dataDir: string, skip: Set<string>): string[] {
  const top = readdirSync(dataDir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.db') && !skip.has(e.name))
    .map((e) => e.name)
    .sort();
  const indexDir = join(dataDir, 'index');
  const index = existsSync(indexDir)
    ? readdirSync(indexDir, { withFileTypes: true })
        .filter((e) => e.isFile() && e.name.endsWith('.db'))
        .map((e) => e.name)
        .sort()
    : [];
  // The projection's checkpoint (index/meta.db) before the partitions, so the copied rows are never behind it
  // (the projection replays from it, idempotently); the log after the index, so it holds every event the rows
  // came from; the vault last, so it holds the key of every copied event (and every shredding done meanwhile).
  const last = ['events.db', 'keys.db'];
  return [
    ...(index.includes('meta.db') ? ['index/meta.db'] : []),
    ...index.filter((name) => name !== 'meta.db').map((name) => `index/${name}`),
    ...top.filter((name) => !last.includes(name)),
    ...last.filter((name) => top.includes(name)),
  ];
}

export interface BackupOptions {
  dataDir: string;
  /** A folder that does not exist yet (or is empty). */
  to: string;
  ledgerPath: string;
  /** ELMA_ERASURE_LEDGER_REPLICA, if set: a ledger copy missing or behind is rebuilt from the other first. */
  ledgerReplicaPath?: string;
  temporalDbFile?: string;
  /** Copy master.key and jwt.secret too: the backup can then decrypt itself. */
  includeSecrets: boolean;
  elmaVersion: string;
  now?: () => Date;
}

export interface BackupResult {
  path: string;
  manifest: BackupManifest;
  /** Files of the data folder left out, by name (process state, the ledger, graphs, secrets without the flag). */
  skipped: string[];
}

/**
 * Copies the embedded engines' SQLite files with SQLite's online backup,
 * while ELMA runs: each copy is one consistent snapshot of its file. The
 * files are copied in the order `engineFiles` gives, the manifest records
 * each file's SHA-256 and the erasure ledger's head before the first copy,
 * and the folder appears under its name only once complete.
 */
export async function backupDataDir(options: BackupOptions): Promise<BackupResult> {
  const now = options.now ?? (() => new Date());
  const dataDir = resolve(options.dataDir);
  const target = resolve(options.to);
  if (!existsSync(dataDir)) throw new BackupRefused(`no data folder at ${dataDir}`);
  if (existsSync(target) && readdirSync(target).length > 0)
    throw new BackupRefused(`${target} exists and is not empty; choose a new folder`);
  if (target === dataDir || target.startsWith(`${dataDir}/`)) throw new BackupRefused('the backup folder must be outside the data folder');
  const startedAt = now().toISOString();
  // Before any copy: entries recorded from here on may postdate some copied file, and are re-applied on restore.
  const ledger = openLedgerIfAny(options.ledgerPath, options.ledgerReplicaPath);
  const mark = await ledger?.mark();
  const ledgerMark = mark ? { id: mark.ledgerId, head: mark.seq, chain: mark.chain } : null;
  await ledger?.close();

  const partial = `${target}.partial-${randomBytes(4).toString('hex')}`;
  mkdirSync(join(partial, 'index'), { recursive: true, mode: 0o700 });
  try {
    const skip = neverCopied(dataDir, options.ledgerPath, options.temporalDbFile);
    const files: BackupFile[] = [];
    let eventLogPosition: string | undefined;
    for (const path of engineFiles(dataDir, skip)) {
      const destination = join(partial, path);
      await sqliteBackup(join(dataDir, path), destination);
      if (path === 'events.db') eventLogPosition = logPosition(destination);
      for (const suffix of COMPANIONS) rmSync(`${destination}${suffix}`, { force: true });
      files.push(await describe(partial, path));
    }
    if (options.includeSecrets) {
      for (const name of SECRET_FILES) {
        if (!existsSync(join(dataDir, name))) continue;
        copyFileSync(join(dataDir, name), join(partial, name));
        files.push(await describe(partial, name));
      }
    }
    const copied = new Set(files.map((f) => f.path));
    const skipped = listFiles(dataDir).filter((path) => !copied.has(path) && !isCompanion(path));
    const manifest = BackupManifest.parse({
      type: 'elma.backup',
      formatVersion: FORMAT_VERSIONS.backupManifest,
      elmaVersion: options.elmaVersion,
      startedAt,
      takenAt: now().toISOString(),
      ...(eventLogPosition !== undefined ? { eventLogPosition } : {}),
      ledger: ledgerMark,
      secrets: options.includeSecrets && files.some((f) => f.path === 'master.key'),
      files,
      rebuiltOnStart: listFiles(dataDir).some((p) => p.endsWith(GRAPH_SUFFIX))
        ? ['index vector graphs (index/*.usearch), from the rows']
        : [],
    });
    writeFileSync(join(partial, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: OWNER_ONLY });
    for (const file of [...files.map((f) => f.path), MANIFEST_FILE]) fsyncPath(join(partial, file));
    fsyncPath(join(partial, 'index'));
    fsyncPath(partial);
    if (existsSync(target)) rmSync(target, { recursive: true });
    renameSync(partial, target);
    fsyncPath(dirname(target));
    return { path: target, manifest, skipped };
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    throw error;
  }
}

/** SQLite's online backup of one file, in one step after the first (so a writer cannot make it start over forever). */
async function sqliteBackup(source: string, destination: string): Promise<void> {
  const db = new Database(source, { fileMustExist: true, timeout: 10_000 });
  try {
    await db.backup(destination, { progress: () => 1_000_000 });
  } finally {
    db.close();
  }
}

function logPosition(eventsDb: string): string {
  const db = new Database(eventsDb, { readonly: true, fileMustExist: true });
  try {
    // `events` is a view over `event_rows` in the current layout; the table itself answers max() from its rowid at once.
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_rows'").get() ? 'event_rows' : 'events';
    const row = db.prepare(`SELECT coalesce(max(position), 0) AS head FROM ${table}`).get() as { head: number | bigint };
    return String(row.head);
  } finally {
    db.close();
  }
}

async function describe(root: string, path: string): Promise<BackupFile> {
  const full = join(root, path);
  return { path, bytes: statSync(full).size, sha256: await fileSha256(full) };
}

export async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function listFiles(dataDir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dataDir, { withFileTypes: true })) {
    if (entry.isFile()) out.push(entry.name);
    else if (entry.isDirectory() && entry.name === 'index') {
      for (const inner of readdirSync(join(dataDir, 'index'), { withFileTypes: true })) if (inner.isFile()) out.push(`index/${inner.name}`);
    }
  }
  return out.sort();
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads and checks a backup: the manifest against its schema, every file it
 * names against its size and SHA-256, and no other file. Throws BackupInvalid.
 */
export async function verifyBackup(from: string): Promise<BackupManifest> {
  const root = resolve(from);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(root, MANIFEST_FILE), 'utf8'));
  } catch {
    throw new BackupInvalid(`no readable ${MANIFEST_FILE} in ${root}`);
  }
  const version = (raw as { formatVersion?: unknown })?.formatVersion;
  if (typeof version === 'number' && version !== FORMAT_VERSIONS.backupManifest) {
    throw new BackupInvalid(`manifest format version ${version}, this ELMA reads ${FORMAT_VERSIONS.backupManifest}`);
  }
  const parsed = BackupManifest.safeParse(raw);
  if (!parsed.success) throw new BackupInvalid(`${MANIFEST_FILE} is not an ELMA backup manifest`);
  const manifest = parsed.data;
  const paths = new Set<string>();
  for (const file of manifest.files) {
    if (paths.has(file.path)) throw new BackupInvalid(`${file.path} is listed twice`);
    paths.add(file.path);
    const full = join(root, file.path);
    if (!existsSync(full)) throw new BackupInvalid(`${file.path} is missing`);
    if (statSync(full).size !== file.bytes || (await fileSha256(full)) !== file.sha256) {
      throw new BackupInvalid(`${file.path} does not match its checksum`);
    }
  }
  return manifest;
}

/** The ledger (and its replica) when a copy exists, brought in step; undefined when there is none. */
function openLedgerIfAny(ledgerPath: string, replicaPath: string | undefined): ErasureLedger | undefined {
  if (!existsSync(ledgerPath) && !(replicaPath && existsSync(replicaPath))) return undefined;
  return openErasureLedger({ erasureLedger: ledgerPath, erasureLedgerReplica: replicaPath }, { create: false });
}

/**
 * Refuses a ledger that does not continue what the backup, or the folder about to be replaced, saw: the one
 * check a restore cannot do without (entries lost from the ledger would not be re-applied, and their erasures
 * would come back with the data). The live folder's witness is its last signed head (see `LedgerWitness`).
 * Returns the head after which entries are applied again: the backup's, or 0 when the live folder vouches for a
 * ledger rebuilt after the backup (`--rebind`), which is then applied whole.
 */
async function ledgerContinues(
  ledger: ErasureLedger,
  path: string,
  manifest: BackupManifest,
  live: SignedLedgerHead | undefined,
): Promise<number> {
  const held = { id: ledger.id, seq: await ledger.head(), chainAt: (seq: number) => ledger.chainAt(seq) };
  const refuse = (against: string, gap: string) => new RestoreRefused(new ErasureLedgerIncomplete(path, against, gap).message);
  if (live) {
    const gap = ledgerGap(held, live.head);
    if (gap) throw refuse('the data folder being replaced', gap);
  }
  if (!manifest.ledger) return 0;
  const seen: LedgerMark = {
    ledgerId: manifest.ledger.id,
    seq: manifest.ledger.head,
    chain: manifest.ledger.chain ?? held.chainAt(manifest.ledger.head) ?? '',
  };
  const gap = ledgerGap(held, seen);
  if (!gap) return manifest.ledger.head;
  if (live && live.head.ledgerId === ledger.id && ledger.id !== manifest.ledger.id) return 0;
  throw refuse('the backup', gap);
}

/** The last ledger head the folder's own event log witnessed (embedded log only), if any. */
function liveWitness(dataDir: string): SignedLedgerHead | undefined {
  const eventsDb = join(dataDir, 'events.db');
  if (!existsSync(eventsDb)) return undefined;
  const witnessed = SignedLedgerHead.safeParse(lastEventData(eventsDb, streams.ledgerWitness));
  return witnessed.success ? witnessed.data : undefined;
}

/**
 * The signing keys a backup's vault holds (their ids), or undefined when it holds no SQLite vault: a ledger head
 * signed by a key rotated after the backup cannot be checked by the restored vault alone.
 */
function signingKeysOf(keysDb: string): Set<string> | undefined {
  if (!existsSync(keysDb)) return undefined;
  const db = new Database(keysDb, { readonly: true, fileMustExist: true });
  try {
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'signing_keys'").get();
    return table ? new Set(db.prepare('SELECT kid FROM signing_keys').pluck().all() as string[]) : undefined;
  } finally {
    db.close();
  }
}

/** Key ids in a key export (JWKS), if one is configured and readable. */
function exportedKeyIds(jwksFile: string | undefined): Set<string> {
  if (!jwksFile || !existsSync(jwksFile)) return new Set();
  try {
    const keys = (JSON.parse(readFileSync(jwksFile, 'utf8')) as { keys?: { kid?: unknown }[] }).keys ?? [];
    return new Set(keys.map((key) => key.kid).filter((kid): kid is string => typeof kid === 'string'));
  } catch {
    return new Set();
  }
}

export interface RestoreOptions {
  from: string;
  dataDir: string;
  ledgerPath: string;
  ledgerReplicaPath?: string;
  temporalDbFile?: string;
  /** Restore although there is no erasure ledger (erasures done after the backup then come back). */
  withoutLedger: boolean;
  /** With `withoutLedger`: although the folder being replaced witnessed ledger entries (they are lost). */
  acceptLedgerLoss?: boolean;
  /** ELMA_CERTIFICATE_KEYS: a key export whose keys the next start trusts besides the restored vault's. */
  certificateKeysFile?: string;
  /** Test only: awaited at each step of the staging and the swap, so that a fault test can kill the process there. */
  pause?: (step: RestoreStep) => Promise<void>;
}

/** The steps of a restore's staging and swap, in order (see `RestoreOptions.pause`). */
export const RESTORE_STEPS = ['before-staging', 'staging', 'staged', 'swapping', 'swapped', 'done'] as const;
export type RestoreStep = (typeof RESTORE_STEPS)[number];

export interface RestoreResult {
  manifest: BackupManifest;
  /** Ledger entries the next start applies again (undefined without a ledger). */
  /** Ledger entries the next start applies again: all of them, and how many are tenant off-boardings. */
  reapply: { after: number; entries: number; offboardings: number } | undefined;
  /** Files of the data folder the backup did not replace and that were kept. */
  kept: string[];
  /** Warnings for the operator (e.g. the master key the data needs is not in the folder). */
  warnings: string[];
}

/**
 * Restores a backup into a data folder no process owns (it claims the folder
 * for the time of the restore: one that is in use is refused with
 * DataDirInUse). The backup is verified whole first and nothing is changed
 * when it fails. The erasure ledger is never overwritten: it is told to
 * re-apply, on the next start, every erasure recorded after the backup's
 * ledger head. The files are copied and checked into a staging folder, then
 * swapped in under a marker that stops ELMA from starting on a half-swapped folder.
 */
export async function restoreDataDir(options: RestoreOptions): Promise<RestoreResult> {
  const dataDir = resolve(options.dataDir);
  const manifest = await verifyBackup(options.from);
  const skip = neverCopied(dataDir, options.ledgerPath, options.temporalDbFile);
  const forbidden = manifest.files.find((f) => skip.has(f.path) || isCompanion(f.path));
  if (forbidden) throw new BackupInvalid(`${forbidden.path} is never part of a backup`);
  // Claiming the folder also removes what an interrupted restore left staged (see removeLeftovers).
  const ownership = claimDataDir(dataDir, { command: 'elma restore', ports: {} });
  try {
    const warnings: string[] = [];
    for (const name of SECRET_FILES) {
      const inBackup = join(resolve(options.from), name);
      const inFolder = join(dataDir, name);
      if (!manifest.files.some((f) => f.path === name) || !existsSync(inFolder)) continue;
      if (readFileSync(inBackup, 'utf8').trim() !== readFileSync(inFolder, 'utf8').trim() && name === 'master.key') {
        throw new RestoreRefused(
          `${inFolder} differs from the backup's master key; move it away first if the backup's key is the one to use`,
        );
      }
    }
    if (!manifest.secrets && !existsSync(join(dataDir, 'master.key'))) {
      warnings.push(
        'the backup holds no master key and the folder has none: start ELMA with the master key the backup was made with (ELMA_MASTER_KEY)',
      );
    }
    let reapply: RestoreResult['reapply'];
    const ledger = openLedgerIfAny(options.ledgerPath, options.ledgerReplicaPath);
    const live = liveWitness(dataDir);
    if (ledger) {
      try {
        // The backup's ledger, continued: every entry after the backup's head is applied again (each is idempotent).
        const after = await ledgerContinues(ledger, options.ledgerPath, manifest, live);
        const headKey = ledger.signedHead()?.signature.kid;
        const restoredKeys = manifest.files.some((f) => f.path === 'keys.db')
          ? signingKeysOf(join(resolve(options.from), 'keys.db'))
          : undefined;
        if (headKey && restoredKeys && !restoredKeys.has(headKey) && !exportedKeyIds(options.certificateKeysFile).has(headKey)) {
          throw new RestoreRefused(
            `the erasure ledger's head is signed with key ${headKey}, which the backup's key vault does not hold (the signing key ` +
              'was rotated after the backup), so the restored ELMA could not check it. Export the current keys first ' +
              "('elma keys export --out FILE', with ELMA stopped, on this folder), set ELMA_CERTIFICATE_KEYS=FILE, and restore again",
          );
        }
        await ledger.requireReapply(after);
        const pending = await ledger.entries(after);
        reapply = {
          after: (await ledger.pendingReapply()) ?? after,
          entries: pending.length,
          offboardings: pending.filter(({ entry }) => isTenantOffboardingEntry(entry)).length,
        };
      } finally {
        await ledger.close();
      }
    } else if (options.withoutLedger && live && live.head.seq > 0 && !options.acceptLedgerLoss) {
      throw new RestoreRefused(
        `the data folder being replaced witnessed ${live.head.seq} erasure ledger entries (erasures and off-boardings), and ` +
          'there is no ledger to apply them again: restoring would bring them back. Put the ledger (or its replica) back, or ' +
          "rebuild it from the certificates on this folder first ('elma erasure reapply --certificates DIR --rebind'), then " +
          'restore; to restore anyway and lose them, add --accept-ledger-loss',
      );
    } else if (!options.withoutLedger) {
      throw new RestoreRefused(
        `no erasure ledger at ${options.ledgerPath}: erasures completed after the backup could not be re-applied. ` +
          'Point ELMA_ERASURE_LEDGER at the ledger (or ELMA_ERASURE_LEDGER_REPLICA at its replica); if every copy is lost, pass ' +
          "--without-ledger, then rebuild it from the certificates before starting ('elma erasure reapply --certificates DIR --rebind')",
      );
    } else {
      warnings.push('restored without an erasure ledger: erasures completed after the backup are not re-applied');
    }

    await stageAndSwap(resolve(options.from), dataDir, manifest, options.pause, ledger ? live : undefined);
    const kept = listFiles(dataDir).filter(
      (p) => !manifest.files.some((f) => f.path === p) && !skip.has(p) && !isCompanion(p) && p.endsWith('.db'),
    );
    return { manifest, reapply, kept, warnings };
  } finally {
    ownership.release();
  }
}

/**
 * Copies the backup's files into a staging folder inside the data folder and
 * checks them, then swaps them in under the marker that stops ELMA from
 * starting on a half-swapped folder. The caller owns the folder. Killed before
 * the marker, the folder is the old one and the staging a leftover the next
 * owner removes; killed after it, the next start refuses until the same
 * restore is run again (which stages afresh from the backup).
 */
async function stageAndSwap(
  from: string,
  dataDir: string,
  manifest: BackupManifest,
  pause: RestoreOptions['pause'],
  witness: SignedLedgerHead | undefined,
): Promise<void> {
  const atStep = pause ?? (async () => undefined);
  await atStep('before-staging');
  const staging = join(dataDir, `${RESTORE_STAGING_PREFIX}${randomBytes(4).toString('hex')}`);
  mkdirSync(join(staging, 'index'), { recursive: true, mode: 0o700 });
  try {
    const toStage = manifest.files.filter(
      (file) => !(SECRET_FILES.includes(file.path as (typeof SECRET_FILES)[number]) && existsSync(join(dataDir, file.path))),
    );
    for (const [i, file] of toStage.entries()) {
      const staged = join(staging, file.path);
      copyFileSync(join(from, file.path), staged);
      if ((await fileSha256(staged)) !== file.sha256) throw new BackupInvalid(`${file.path} changed while it was copied`);
      fsyncPath(staged);
      if (i + 1 === Math.ceil(toStage.length / 2)) await atStep('staging');
    }
    carryForwardRevocations(join(dataDir, REVOCATIONS_FILE), join(staging, REVOCATIONS_FILE));
    if (witness) await carryForwardWitness(witness, join(staging, 'events.db'));
    fsyncPath(staging);
    await atStep('staged');
    // From here the folder is being swapped: the marker stops a start until the swap is complete.
    writeFileSync(join(dataDir, RESTORE_MARKER_FILE), `${JSON.stringify({ from, takenAt: manifest.takenAt })}\n`, { mode: OWNER_ONLY });
    fsyncPath(dataDir);
    // A secret the folder already had was not staged: it stays as it is.
    const replaced = manifest.files.map((f) => f.path).filter((path) => existsSync(join(staging, path)));
    // The index is replaced whole (partitions of tenants the backup lacks, graphs that belong to other rows).
    rmSync(join(dataDir, 'index'), { recursive: true, force: true });
    for (const path of replaced) {
      if (path.startsWith('index/')) continue;
      for (const suffix of ['', ...COMPANIONS]) rmSync(join(dataDir, `${path}${suffix}`), { force: true });
    }
    mkdirSync(join(dataDir, 'index'), { recursive: true, mode: 0o700 });
    for (const [i, path] of replaced.entries()) {
      renameSync(join(staging, path), join(dataDir, path));
      if (i === 0) await atStep('swapping');
    }
    fsyncPath(join(dataDir, 'index'));
    fsyncPath(dataDir);
    await atStep('swapped');
    rmSync(staging, { recursive: true, force: true });
    rmSync(join(dataDir, RESTORE_MARKER_FILE), { force: true });
    fsyncPath(dataDir);
    await atStep('done');
  } catch (error) {
    // Before the marker, nothing was changed; after it, the marker stays and ELMA refuses to start until a rerun.
    if (!existsSync(join(dataDir, RESTORE_MARKER_FILE))) rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Appends the replaced folder's last ledger witness to the staged event log: the restored data then knows how much
 * of the ledger the folder saw (a ledger rebuilt after the backup included), as the folder did, instead of only what
 * the backup saw. The restore checked the ledger against it first.
 */
async function carryForwardWitness(witness: SignedLedgerHead, stagedEventsDb: string): Promise<void> {
  if (!existsSync(stagedEventsDb)) return;
  const log = SqliteEventLog.open(stagedEventsDb);
  try {
    await log.append(streams.ledgerWitness, [{ id: randomUUID(), type: 'LedgerWitnessed', data: { ...witness } }], {
      expectedRevision: 'any',
    });
  } finally {
    await log.close();
  }
  // Back to a rollback journal, so the staged file is whole on its own when it is moved into place (no -wal beside it).
  const db = new Database(stagedEventsDb);
  try {
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
}

/** The token deny list (infra/src/auth/revocations.ts): a restore must not bring a revoked token back to life. */
const REVOCATIONS_FILE = 'tokens.db';

/**
 * Adds the folder's current revocations to the staged copy of the deny list before it replaces them: a token
 * revoked after the backup stays revoked (an entry keeps the later of its two expiries). Revocations only ever
 * add, until they expire, so the union is never less safe than either side.
 */
function carryForwardRevocations(current: string, staged: string): void {
  if (!existsSync(current) || !existsSync(staged)) return;
  const db = new Database(staged);
  try {
    db.prepare('ATTACH DATABASE ? AS current').run(current);
    db.exec(
      `INSERT INTO main.revoked_tokens (tenant, jti, expires_at, revoked_at)
         SELECT tenant, jti, expires_at, revoked_at FROM current.revoked_tokens WHERE true
       ON CONFLICT (tenant, jti) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)`,
    );
    db.exec('DETACH DATABASE current');
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
}
