import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { removeLeftovers } from './leftovers';
import { OWNER_ONLY, ownerOnlyDatabaseFile } from './owner-only';

/** What the process that owns a data folder says about itself, for the refusal message of the next one. */
export interface DataDirOwnerInfo {
  pid: number;
  /** e.g. `elma start`. */
  command: string;
  startedAt: string;
  /** e.g. `{ api: 8080, temporal: 7233, temporalUi: 8233 }`. */
  ports: Record<string, number>;
}

export class DataDirInUse extends Error {
  readonly code = 'DATA_DIR.IN_USE';
  constructor(
    readonly dataDir: string,
    readonly owner: DataDirOwnerInfo | undefined,
  ) {
    const who = owner
      ? `pid ${owner.pid} (${owner.command}, since ${owner.startedAt}${
          Object.keys(owner.ports).length
            ? `; ports ${Object.entries(owner.ports)
                .map(([name, port]) => `${name} ${port}`)
                .join(', ')}`
            : ''
        })`
      : 'another process (it recorded no details)';
    super(
      `the data folder ${dataDir} is in use by ${who}. ` +
        'One process owns the embedded event log and index: stop that one first, or set ELMA_DATA_DIR to another folder.',
    );
    this.name = 'DataDirInUse';
  }
}

export interface DataDirOwnership {
  release(): void;
}

export const OWNER_LOCK_FILE = 'owner.lock';
export const OWNER_INFO_FILE = 'owner.json';

/**
 * Claims a data folder for this process for as long as it runs, or throws
 * DataDirInUse at once if another process holds it.
 *
 * The claim is an exclusive SQLite lock held on `owner.lock` (exclusive
 * locking mode, a write transaction never committed). It is a POSIX lock of
 * this process, so the kernel drops it when the process dies in any way,
 * kill -9 included: no stale lock to clean up. `owner.json` beside it only
 * names the owner for the message; it may be stale, the lock is the truth.
 * This process must never open and close `owner.lock` otherwise, which
 * would drop the lock (the byte scan reads files from a child process).
 *
 * Before anything else, the new owner removes the temporary copies a dead
 * owner left (see removeLeftovers): a restore's staging holds erased content.
 */
export function claimDataDir(dataDir: string, info: Omit<DataDirOwnerInfo, 'pid' | 'startedAt'>): DataDirOwnership {
  const lock = lockDataDir(dataDir);
  if (!lock) throw new DataDirInUse(dataDir, readOwner(join(dataDir, OWNER_INFO_FILE)));
  removeLeftovers(dataDir);
  const infoPath = join(dataDir, OWNER_INFO_FILE);
  const owner: DataDirOwnerInfo = { pid: process.pid, startedAt: new Date().toISOString(), ...info };
  // Written whole then renamed, so the next process never reads half of it.
  writeFileSync(`${infoPath}.tmp`, `${JSON.stringify(owner, null, 2)}\n`, { mode: OWNER_ONLY });
  renameSync(`${infoPath}.tmp`, infoPath);
  // Held here too: a caller that drops the ownership object must not lose the lock when the connection is collected.
  heldLocks.add(lock);
  return {
    release() {
      if (!heldLocks.delete(lock)) return;
      lock.close();
    },
  };
}

/** The owner locks this process holds (a garbage-collected connection would close, and so release its lock). */
const heldLocks = new Set<Database.Database>();

/**
 * For processes that share a data folder without owning it (the production
 * engines: `elma api` beside `elma worker`): removes the leftovers of a dead
 * owner when no process holds the folder, and returns whether it could. A
 * folder held (by a restore, or an `elma start`) is left as it is: its owner
 * removed them when it claimed it. `owner.json` is not touched.
 */
export function tidyDataDir(dataDir: string): boolean {
  const lock = lockDataDir(dataDir);
  if (!lock) return false;
  try {
    removeLeftovers(dataDir);
    return true;
  } finally {
    lock.close();
  }
}

/** The owner lock on `owner.lock` (see claimDataDir), or undefined when another process holds it. */
function lockDataDir(dataDir: string): Database.Database | undefined {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const lockPath = join(dataDir, OWNER_LOCK_FILE);
  ownerOnlyDatabaseFile(lockPath);
  // timeout 0: a second start must refuse at once, not wait for the first to end.
  const db = new Database(lockPath, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = DELETE');
    db.exec('BEGIN EXCLUSIVE');
    return db;
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return undefined;
    throw error;
  }
}

/** What the last owner of a data folder recorded about itself (it may have ended since: the lock is the truth). */
export function lastDataDirOwner(dataDir: string): DataDirOwnerInfo | undefined {
  return readOwner(join(dataDir, OWNER_INFO_FILE));
}

function readOwner(path: string): DataDirOwnerInfo | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<DataDirOwnerInfo>;
    if (typeof parsed.pid !== 'number') return undefined;
    return {
      pid: parsed.pid,
      command: String(parsed.command ?? 'elma'),
      startedAt: String(parsed.startedAt ?? '?'),
      ports: parsed.ports ?? {},
    };
  } catch {
    return undefined;
  }
}
