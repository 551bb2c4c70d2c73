import type Database from 'better-sqlite3';

/**
 * A shredded record keeps only its id, and a destroyed tenant only its name, so
 * that a later request raises an error instead of silently minting a new key
 * (which would let old ciphertext look merely "unreadable" rather than erased,
 * and new writes look like the old record). `generation` counts shreds and
 * destructions so that other processes notice and drop their key caches.
 *
 * A subject's pseudonym row is found by a MAC of the subject's id under the
 * tenant key and holds the id sealed under that key, so the file alone names
 * nobody; forgetting a subject deletes the row and leaves no marker (a later
 * write of the same subject gets a fresh pseudonym).
 */
const schema = `
CREATE TABLE IF NOT EXISTS tenants (
  tenant TEXT PRIMARY KEY,
  salt   BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS destroyed_tenants (
  tenant TEXT PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS data_keys (
  tenant    TEXT NOT NULL,
  record_id TEXT NOT NULL,
  wrapped   BLOB NOT NULL,
  PRIMARY KEY (tenant, record_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shredded (
  tenant    TEXT NOT NULL,
  record_id TEXT NOT NULL,
  PRIMARY KEY (tenant, record_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS subject_pseudonyms (
  tenant      TEXT NOT NULL,
  subject_mac BLOB NOT NULL,
  pseudonym   TEXT NOT NULL,
  subject     BLOB NOT NULL,
  PRIMARY KEY (tenant, subject_mac),
  UNIQUE (tenant, pseudonym)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS generation (
  id    INTEGER PRIMARY KEY CHECK (id = 0),
  value INTEGER NOT NULL
);
INSERT OR IGNORE INTO generation (id, value) VALUES (0, 0);
`;

export function openKeyVaultDatabase(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // Fewer, larger checkpoints (each one fsyncs); shred and tenant destruction checkpoint at once anyway.
  db.pragma('wal_autocheckpoint = 10000');
  // Shredded keys must not survive in free pages or free cell space.
  db.pragma('secure_delete = ON');
  db.exec(schema);
}
