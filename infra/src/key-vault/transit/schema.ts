import type Database from 'better-sqlite3';
import { dataKeysTable, subjectPseudonymsTable } from '../shared-tables';

/**
 * The local half of the transit key vault: the same rows as the SQLite vault, but every data key and every
 * sealed subject id is a transit ciphertext (`vault:vN:...`) of the tenant's key, which never leaves the
 * key-management server. A tenant row names its transit key (a hash of the tenant id; its MAC key is
 * `<name>-mac`) and the MAC key's version the subject MACs are pinned to. `destroyed_tenants` keeps the key name until the server has confirmed the
 * key's deletion (`key_deleted`), so a destruction interrupted by an outage is finished by the next call.
 */
const schema = `
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (key, value) VALUES ('format', 'transit-key-vault/1');
CREATE TABLE IF NOT EXISTS tenants (
  tenant       TEXT PRIMARY KEY,
  key_name     TEXT NOT NULL,
  hmac_version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS destroyed_tenants (
  tenant      TEXT PRIMARY KEY,
  key_name    TEXT NOT NULL,
  key_deleted INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
${dataKeysTable('TEXT')}
${subjectPseudonymsTable('TEXT')}
`;

export function openTransitVaultDatabase(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 10000');
  // Shredded wrapped keys must not survive in free pages or free cell space.
  db.pragma('secure_delete = ON');
  db.exec(schema);
}
