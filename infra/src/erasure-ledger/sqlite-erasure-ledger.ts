import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import {
  ErasureLedgerUnreadable,
  FORMAT_VERSIONS,
  LedgerEntry,
  SignedLedgerHead,
  type AttestOptions,
  type ErasureLedger,
  type LedgeredErasure,
  type LedgerHeadSigner,
  type LedgerMark,
} from '@elma/domain';
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

/** The chain's start: made of the ledger's id, so that two ledgers never share a chain value. */
export const chainStart = (ledgerId: string) => sha256(`elma.erasure-ledger\n${ledgerId}`);
/** The chain value after one more entry: SHA-256 of the previous value and the entry's own SHA-256. */
export const chainNext = (previous: string, entrySha256: string) => sha256(`${previous}\n${entrySha256}`);

/**
 * The erasure ledger in its own small SQLite file. Each entry carries the
 * SHA-256 of its JSON: a file damaged or altered by hand is refused when it
 * is opened (ErasureLedgerUnreadable), never half-read. Rollback journal,
 * full sync: the file is small, written once per erasure, and may sit on a
 * volume shared by the API and worker processes where WAL cannot work.
 */
export class SqliteErasureLedger implements ErasureLedger {
  private signer: LedgerHeadSigner | undefined;

  private constructor(
    private readonly db: Database.Database,
    readonly id: string,
    readonly path: string,
    /** chains[n]: the chain value after entry n (chains[0]: the start). */
    private readonly chains: string[],
  ) {}

  /**
   * Opens (or creates, where no file is) the ledger and checks every entry; throws ErasureLedgerUnreadable on
   * anything it cannot trust, an existing file without a ledger's identity included (an emptied file is not a new
   * ledger). `create: false` refuses a missing file too.
   */
  static open(path: string, options: { create?: boolean } = {}): SqliteErasureLedger {
    const created = !existsSync(path);
    if (created && options.create === false) throw new ErasureLedgerUnreadable(path, 'no such file');
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
      const chains = SqliteErasureLedger.verifyEntries(db, path, id);
      return new SqliteErasureLedger(db, id, path, chains);
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
      // Only a file this open made is a new ledger. An existing one without identity was emptied (SQLite reads a
      // 0-byte file as an empty database) or altered: refused rather than re-stamped, or it would pass for a ledger
      // that never recorded an erasure.
      if (!created) throw new ErasureLedgerUnreadable(path, 'the file holds no ledger (emptied, or not a ledger)');
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

  private static verifyEntries(db: Database.Database, path: string, id: string): string[] {
    const chains = [chainStart(id)];
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
      // Entries are numbered 1, 2, ... with no gap: a removed row would otherwise leave the chain intact.
      if (row.seq !== chains.length) throw new ErasureLedgerUnreadable(path, `entry ${chains.length} is missing`);
      chains.push(chainNext(chains[chains.length - 1]!, row.sha256));
    }
    return chains;
  }

  /** Extends the chain with entries another process (the worker beside the API) recorded since. */
  private refresh(): void {
    const rows = this.db.prepare('SELECT seq, entry, sha256 FROM erasures WHERE seq >= ? ORDER BY seq').all(this.chains.length) as {
      seq: number;
      entry: string;
      sha256: string;
    }[];
    for (const row of rows) {
      if (row.seq !== this.chains.length || sha256(row.entry) !== row.sha256) {
        throw new ErasureLedgerUnreadable(this.path, `entry ${row.seq} does not match its checksum or place`);
      }
      this.chains.push(chainNext(this.chains[this.chains.length - 1]!, row.sha256));
    }
  }

  async mark(): Promise<LedgerMark> {
    this.refresh();
    const seq = this.chains.length - 1;
    return { ledgerId: this.id, seq, chain: this.chains[seq]! };
  }

  /** How many entries the ledger holds. */
  entryCount(): number {
    this.refresh();
    return this.chains.length - 1;
  }

  /** Writes a consistent copy of this ledger (identity, entries, signed head, marks) to a new file. */
  copyTo(path: string): void {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.db.prepare('VACUUM INTO ?').run(path);
    ownerOnlyDatabaseFile(path);
  }

  /**
   * Adds the entries of `other` (the same ledger, further on: the caller checked that this one is its prefix) and
   * takes its signed head, in one transaction.
   */
  appendFrom(other: SqliteErasureLedger): void {
    const rows = other.db
      .prepare('SELECT seq, tenant, request_id, entry, sha256 FROM erasures WHERE seq > ? ORDER BY seq')
      .all(this.entryCount()) as {
      seq: number;
      tenant: string;
      request_id: string;
      entry: string;
      sha256: string;
    }[];
    const head = other.db.prepare(`SELECT value FROM ledger_meta WHERE key = 'signedHead'`).get() as { value: string } | undefined;
    this.db
      .transaction(() => {
        const insert = this.db.prepare('INSERT INTO erasures (seq, tenant, request_id, entry, sha256) VALUES (?, ?, ?, ?, ?)');
        for (const row of rows) insert.run(row.seq, row.tenant, row.request_id, row.entry, row.sha256);
        if (head) {
          this.db
            .prepare(`INSERT INTO ledger_meta (key, value) VALUES ('signedHead', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
            .run(head.value);
        }
      })
      .immediate();
    this.refresh();
  }

  chainAt(seq: number): string | undefined {
    if (seq >= this.chains.length) this.refresh();
    return this.chains[seq];
  }

  signedHead(): SignedLedgerHead | undefined {
    const row = this.db.prepare(`SELECT value FROM ledger_meta WHERE key = 'signedHead'`).get() as { value: string } | undefined;
    if (!row) return undefined;
    const parsed = SignedLedgerHead.safeParse(JSON.parse(row.value));
    if (!parsed.success) throw new ErasureLedgerUnreadable(this.path, 'its signed head is malformed');
    return parsed.data;
  }

  async attest(signer: LedgerHeadSigner, options: AttestOptions = {}): Promise<void> {
    const signed = this.signedHead();
    const mark = await this.mark();
    if (options.resign) {
      // Taken as it is (`--rebind`): the entries were checked on open; the head is signed again below.
    } else if (signed) {
      const refusal = signer.refusal(signed);
      if (refusal) {
        throw new ErasureLedgerUnreadable(
          this.path,
          `its signed head does not verify (${refusal}); if the signing key was rotated after a backup that was then restored, ` +
            'set ELMA_CERTIFICATE_KEYS to a key export that holds it (elma keys export)',
        );
      }
      const { head } = signed;
      // Entries recorded after the last signature cannot exist: an entry and its signed head are one transaction.
      if (head.ledgerId !== mark.ledgerId || head.seq !== mark.seq || head.chain !== mark.chain) {
        throw new ErasureLedgerUnreadable(
          this.path,
          `its signed head names ${head.seq} entries and it holds ${mark.seq}, or other ones (entries removed, added or edited)`,
        );
      }
    } else if (options.mustBeSigned) {
      throw new ErasureLedgerUnreadable(this.path, 'its signed head is missing, though the data saw it signed (removed by hand)');
    }
    this.signer = signer;
    if (!signed || options.resign) this.saveHead(mark);
  }

  private saveHead(mark: LedgerMark): void {
    if (!this.signer) throw new Error('the erasure ledger is not attested: its heads cannot be signed');
    this.db
      .prepare(`INSERT INTO ledger_meta (key, value) VALUES ('signedHead', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
      .run(JSON.stringify(this.signer.sign(mark)));
  }

  async record(entry: LedgerEntry): Promise<void> {
    const parsed = LedgerEntry.parse(entry);
    const json = JSON.stringify(parsed);
    const digest = sha256(json);
    if (!this.signer) throw new Error('the erasure ledger is not attested: its heads cannot be signed');
    // The entry and the head that names it are written together: a crash leaves both or neither.
    this.db
      .transaction(() => {
        this.refresh();
        const seq = this.chains.length;
        const held = this.db.prepare('SELECT count(*) AS n, coalesce(max(seq), 0) AS last FROM erasures').get() as {
          n: number;
          last: number;
        };
        if (held.n !== seq - 1 || held.last !== seq - 1)
          throw new ErasureLedgerUnreadable(this.path, 'entries were removed while ELMA had it open');
        const inserted = this.db
          .prepare(
            'INSERT INTO erasures (seq, tenant, request_id, entry, sha256) VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, request_id) DO NOTHING',
          )
          .run(seq, parsed.tenant, parsed.requestId, json, digest);
        if (inserted.changes === 0) return;
        const chain = chainNext(this.chains[seq - 1]!, digest);
        this.saveHead({ ledgerId: this.id, seq, chain });
        this.chains.push(chain);
      })
      .immediate();
  }

  async head(): Promise<number> {
    this.refresh();
    return this.chains.length - 1;
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
