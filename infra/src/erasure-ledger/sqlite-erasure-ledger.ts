import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { ErasureLedgerUnreadable, LedgerEntry, FORMAT_VERSIONS, type ErasureLedger, type LedgeredErasure } from '@elma/domain';
import { ownerOnlyDatabaseFile } from '../files/owner-only';

/** The ledger's default file in the data folder; `ELMA_ERASURE_LEDGER` puts it elsewhere. */
export const ERASURE_LEDGER_FILE = 'erasure-ledger.db';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ledger_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS erasures (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant TEXT NOT NULL,
  request_id TEXT NOT NULL,
  entry TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  UNIQUE (tenant, request_id)
);
`;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * The erasure ledger in its own small SQLite file. Each entry carries the
 * SHA-256 of its JSON: a file damaged or altered by hand is refused when it
 * is opened (ErasureLedgerUnreadable), never half-read. Rollback journal,
 * full sync: the file is small, written once per erasure, and may sit on a
 * volume shared by the API and worker processes where WAL cannot work.
 */
export class SqliteErasureLedger implements ErasureLedger {
  private constructor(
    private readonly db: Database.Database,
    readonly id: string,
    readonly path: string,
  ) {}

  /** Opens (or creates) the ledger and checks every entry; throws ErasureLedgerUnreadable on anything it cannot trust. */
  static open(path: string): SqliteErasureLedger {
    const created = !existsSync(path);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    ownerOnlyDatabaseFile(path);
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { timeout: 5_000 });
      db.pragma('journal_mode = DELETE');
      db.pragma('synchronous = FULL');
      db.pragma('secure_delete = ON');
      const check = db.pragma('quick_check', { simple: true });
      if (check !== 'ok') throw new ErasureLedgerUnreadable(path, 'SQLite integrity check failed');
      db.exec(SCHEMA);
      const id = SqliteErasureLedger.identity(db, path, created);
      SqliteErasureLedger.verifyEntries(db, path);
      return new SqliteErasureLedger(db, id, path);
    } catch (error) {
      db?.close();
      if (error instanceof ErasureLedgerUnreadable) throw error;
      const code = (error as { code?: string }).code;
      if (typeof code === 'string' && code.startsWith('SQLITE_')) throw new ErasureLedgerUnreadable(path, code);
      throw error;
    }
  }

  private static identity(db: Database.Database, path: string, created: boolean): string {
    const meta = new Map(
      (db.prepare('SELECT key, value FROM ledger_meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]),
    );
    if (meta.size === 0) {
      const count = (db.prepare('SELECT count(*) AS n FROM erasures').get() as { n: number }).n;
      // A file that has entries but lost its identity was altered: refused rather than re-stamped.
      if (!created && count > 0) throw new ErasureLedgerUnreadable(path, 'no ledger identity');
      const id = randomUUID();
      db.prepare('INSERT INTO ledger_meta (key, value) VALUES (?, ?), (?, ?)').run(
        'id',
        id,
        'formatVersion',
        String(FORMAT_VERSIONS.erasureLedger),
      );
      return id;
    }
    const version = Number(meta.get('formatVersion'));
    if (version !== FORMAT_VERSIONS.erasureLedger) {
      throw new ErasureLedgerUnreadable(
        path,
        `format version ${meta.get('formatVersion')}, this ELMA reads ${FORMAT_VERSIONS.erasureLedger}`,
      );
    }
    const id = meta.get('id');
    if (!id) throw new ErasureLedgerUnreadable(path, 'no ledger identity');
    return id;
  }

  private static verifyEntries(db: Database.Database, path: string): void {
    for (const row of db.prepare('SELECT seq, tenant, request_id, entry, sha256 FROM erasures ORDER BY seq').iterate() as IterableIterator<{
      seq: number;
      tenant: string;
      request_id: string;
      entry: string;
      sha256: string;
    }>) {
      if (sha256(row.entry) !== row.sha256) throw new ErasureLedgerUnreadable(path, `entry ${row.seq} does not match its checksum`);
      let parsed: LedgerEntry;
      try {
        parsed = LedgerEntry.parse(JSON.parse(row.entry));
      } catch {
        throw new ErasureLedgerUnreadable(path, `entry ${row.seq} is not a ledger entry`);
      }
      if (parsed.tenant !== row.tenant || parsed.requestId !== row.request_id) {
        throw new ErasureLedgerUnreadable(path, `entry ${row.seq} does not match its key`);
      }
    }
  }

  async record(entry: LedgerEntry): Promise<void> {
    const parsed = LedgerEntry.parse(entry);
    const json = JSON.stringify(parsed);
    this.db
      .prepare('INSERT INTO erasures (tenant, request_id, entry, sha256) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, request_id) DO NOTHING')
      .run(parsed.tenant, parsed.requestId, json, sha256(json));
  }

  async head(): Promise<number> {
    return (this.db.prepare('SELECT coalesce(max(seq), 0) AS head FROM erasures').get() as { head: number }).head;
  }

  async entries(after: number): Promise<LedgeredErasure[]> {
    const rows = this.db.prepare('SELECT seq, entry, sha256 FROM erasures WHERE seq > ? ORDER BY seq').all(after) as {
      seq: number;
      entry: string;
      sha256: string;
    }[];
    return rows.map((row) => {
      if (sha256(row.entry) !== row.sha256) throw new ErasureLedgerUnreadable(this.path, `entry ${row.seq} does not match its checksum`);
      return { seq: row.seq, entry: LedgerEntry.parse(JSON.parse(row.entry)) };
    });
  }

  async requireReapply(after: number): Promise<void> {
    const mark = Math.max(0, Math.trunc(after));
    this.db
      .prepare(
        `INSERT INTO ledger_meta (key, value) VALUES ('reapplyAfter', ?)
         ON CONFLICT (key) DO UPDATE SET value = min(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))`,
      )
      .run(String(mark));
  }

  async pendingReapply(): Promise<number | undefined> {
    const row = this.db.prepare(`SELECT value FROM ledger_meta WHERE key = 'reapplyAfter'`).get() as { value: string } | undefined;
    return row ? Number(row.value) : undefined;
  }

  async reapplied(after: number): Promise<void> {
    // Cleared only if no restore moved the mark back below what was just applied from.
    this.db.prepare(`DELETE FROM ledger_meta WHERE key = 'reapplyAfter' AND CAST(value AS INTEGER) >= ?`).run(after);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
