import type Database from 'better-sqlite3';
import { DomainError, FORMAT_VERSIONS } from '@elma/domain';
import { dataKeysTable, subjectPseudonymsTable } from '../shared-tables';

/**
 * A shredded record keeps only its id, and a destroyed tenant only its name, so
 * that a later request raises an error instead of silently minting a new key
 * (which would let old ciphertext look merely "unreadable" rather than erased,
 * and new writes look like the old record). `generation` counts shreds,
 * destructions and key retirements so that other processes notice and drop
 * their key caches.
 *
 * A subject's pseudonym row is found by a MAC of the subject's id under the
 * tenant key and holds the id sealed under that key, so the file alone names
 * nobody; forgetting a subject deletes the row and leaves no marker (a later
 * write of the same subject gets a fresh pseudonym).
 *
 * Format 2 (FORMAT_VERSIONS.keyVault, kept in `user_version`) versions every key:
 * - `master_keys`: the master keys (by id, a MAC of the key: never the key) that
 *   wrapped something here; the operator supplies them (ELMA_MASTER_KEY, ELMA_MASTER_KEY_PREVIOUS).
 * - `tenant_keys`: each version of a tenant key, wrapped under a master key
 *   (`wrapped`) or, for a format-1 tenant not yet rotated, derived from it (`salt`).
 * - `data_keys.key_version`, `subject_pseudonyms.key_version`: the tenant key version that wraps the row.
 * - `signing_keys`: certificate signing keys; a retired one keeps its public key only.
 * - `meta`: the derivation root (the secret fingerprints and event ids derive from),
 *   sealed under a master key so that a master key rotation keeps them.
 * - `rotations`: one row per rotation, for status and operations.
 */
const schemaV1 = `
CREATE TABLE IF NOT EXISTS tenants (
  tenant TEXT PRIMARY KEY,
  salt   BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS destroyed_tenants (
  tenant TEXT PRIMARY KEY
) WITHOUT ROWID;
${dataKeysTable('BLOB')}
${subjectPseudonymsTable('BLOB')}
`;

const schemaV2 = `
ALTER TABLE data_keys ADD COLUMN key_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE subject_pseudonyms ADD COLUMN key_version INTEGER NOT NULL DEFAULT 1;
-- A rotation finds (and counts) the rows still under an older version without scanning the re-wrapped ones.
CREATE INDEX data_keys_version ON data_keys (tenant, key_version);
CREATE INDEX subject_pseudonyms_version ON subject_pseudonyms (tenant, key_version);
CREATE TABLE master_keys (
  id         TEXT PRIMARY KEY,
  state      TEXT NOT NULL CHECK (state IN ('active', 'retired')),
  added_at   TEXT NOT NULL,
  retired_at TEXT
) WITHOUT ROWID;
CREATE TABLE tenant_keys (
  tenant     TEXT NOT NULL,
  version    INTEGER NOT NULL,
  master_id  TEXT NOT NULL,
  salt       BLOB,
  wrapped    BLOB,
  state      TEXT NOT NULL CHECK (state IN ('active', 'retiring')),
  created_at TEXT NOT NULL,
  PRIMARY KEY (tenant, version),
  CHECK ((salt IS NULL) <> (wrapped IS NULL))
) WITHOUT ROWID;
CREATE TABLE signing_keys (
  kid        TEXT PRIMARY KEY,
  version    INTEGER NOT NULL UNIQUE,
  x          TEXT NOT NULL,
  master_id  TEXT,
  seed       TEXT,
  state      TEXT NOT NULL CHECK (state IN ('active', 'retired')),
  created_at TEXT NOT NULL,
  retired_at TEXT
) WITHOUT ROWID;
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE rotations (
  id          TEXT PRIMARY KEY,
  kind        TEXT NOT NULL CHECK (kind IN ('master', 'tenant', 'signing')),
  tenant      TEXT,
  target      TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('running', 'done')),
  started_at  TEXT NOT NULL,
  finished_at TEXT,
  rewrapped   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
`;

export function openKeyVaultDatabase(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // Fewer, larger checkpoints (each one fsyncs); shred and tenant destruction checkpoint at once anyway.
  db.pragma('wal_autocheckpoint = 10000');
  // Shredded keys must not survive in free pages or free cell space.
  db.pragma('secure_delete = ON');
  db.exec(schemaV1);
}

export function keyVaultFormat(db: Database.Database): number {
  // A format-1 file has user_version 0.
  return Math.max(1, db.pragma('user_version', { simple: true }) as number);
}

/** Refuses a file written by a newer ELMA: its keys would be misread. */
export function assertReadableFormat(db: Database.Database, path: string): void {
  const format = keyVaultFormat(db);
  if (format > FORMAT_VERSIONS.keyVault) {
    throw new DomainError(
      'KEY_VAULT.FORMAT_UNSUPPORTED',
      `${path} is key vault format ${format}; this ELMA reads format ${FORMAT_VERSIONS.keyVault} and older. Run the newer ELMA version.`,
      { format, supported: FORMAT_VERSIONS.keyVault },
    );
  }
}

/** Adds the format-2 tables and columns; the caller moves the format-1 tenants over in the same transaction. */
export function addFormat2Tables(db: Database.Database): void {
  db.exec(schemaV2);
}

export function setFormat(db: Database.Database, version: number): void {
  db.pragma(`user_version = ${version}`);
}
