import Database from 'better-sqlite3';
import { ownerOnlyDatabaseFile } from '../files/owner-only';

/**
 * The token deny list: revoked token ids (`jti`) per tenant, each kept until
 * the token would have expired anyway, in one SQLite file that every process
 * of a data folder shares (a revocation is seen by the next request of any
 * process, and survives restarts). An entry names the tenant it was revoked
 * for, so a tenant can only ever deny its own tokens.
 */
export class SqliteTokenRevocations {
  private readonly db: Database.Database;
  private readonly statements;

  constructor(path: string) {
    ownerOnlyDatabaseFile(path);
    this.db = new Database(path, { timeout: 5_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS revoked_tokens (
        tenant     TEXT NOT NULL,
        jti        TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER NOT NULL,
        PRIMARY KEY (tenant, jti)
      ) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS revoked_tokens_expiry ON revoked_tokens (expires_at);
    `);
    if ((this.db.pragma('user_version', { simple: true }) as number) === 0) this.db.pragma('user_version = 1');
    this.statements = {
      isRevoked: this.db.prepare('SELECT 1 FROM revoked_tokens WHERE tenant = ? AND jti = ? AND expires_at >= ?').pluck(),
      // A second revocation keeps the later expiry.
      revoke: this.db
        .prepare(
          `INSERT INTO revoked_tokens (tenant, jti, expires_at, revoked_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (tenant, jti) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)
           RETURNING expires_at`,
        )
        .pluck(),
      purge: this.db.prepare('DELETE FROM revoked_tokens WHERE expires_at < ?'),
      count: this.db.prepare('SELECT count(*) FROM revoked_tokens WHERE expires_at >= ?').pluck(),
    };
  }

  /**
   * Denies the tenant's token `jti` until `expiresAt` (seconds since the epoch), or later if its entry already
   * lasts longer (never shortened); drops entries already past theirs. Returns when the entry now ends.
   */
  revoke(tenant: string, jti: string, expiresAt: number, now: number): number {
    return this.db
      .transaction(() => {
        this.statements.purge.run(now);
        return this.statements.revoke.get(tenant, jti, expiresAt, now) as number;
      })
      .immediate();
  }

  isRevoked(tenant: string, jti: string, now: number): boolean {
    return this.statements.isRevoked.get(tenant, jti, now) !== undefined;
  }

  /** Entries still in force (for status and metrics). */
  active(now: number): number {
    return this.statements.count.get(now) as number;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
