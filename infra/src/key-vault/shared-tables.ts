import type Database from 'better-sqlite3';

/**
 * The tables and statements both SQLite-backed key vaults (the local one in
 * sqlite/ and the transit one in transit/) keep alike: data keys, shredded
 * record ids, subject pseudonyms and the shred generation. The text of each
 * CREATE statement is what existing files hold in sqlite_master: do not
 * reword it. The wrapped key and the sealed subject are BLOB in the local
 * vault and TEXT (a transit ciphertext) in the transit one.
 */
export const dataKeysTable = (wrapped: 'BLOB' | 'TEXT') => `CREATE TABLE IF NOT EXISTS data_keys (
  tenant    TEXT NOT NULL,
  record_id TEXT NOT NULL,
  wrapped   ${wrapped} NOT NULL,
  PRIMARY KEY (tenant, record_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shredded (
  tenant    TEXT NOT NULL,
  record_id TEXT NOT NULL,
  PRIMARY KEY (tenant, record_id)
) WITHOUT ROWID;`;

export const subjectPseudonymsTable = (subject: 'BLOB' | 'TEXT') => `CREATE TABLE IF NOT EXISTS subject_pseudonyms (
  tenant      TEXT NOT NULL,
  subject_mac BLOB NOT NULL,
  pseudonym   TEXT NOT NULL,
  subject     ${subject} NOT NULL,
  PRIMARY KEY (tenant, subject_mac),
  UNIQUE (tenant, pseudonym)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS generation (
  id    INTEGER PRIMARY KEY CHECK (id = 0),
  value INTEGER NOT NULL
);
INSERT OR IGNORE INTO generation (id, value) VALUES (0, 0);`;

/** The statements on those tables that both vaults run as they are. */
export function sharedStatements(db: Database.Database) {
  const prepare = (sql: string) => db.prepare(sql);
  return {
    generation: prepare('SELECT value FROM generation WHERE id = 0').pluck(),
    bumpGeneration: prepare('UPDATE generation SET value = value + 1 WHERE id = 0 RETURNING value').pluck(),
    isShredded: prepare('SELECT 1 FROM shredded WHERE tenant = ? AND record_id = ?').pluck(),
    deleteKey: prepare('DELETE FROM data_keys WHERE tenant = ? AND record_id = ?'),
    markShredded: prepare('INSERT OR IGNORE INTO shredded (tenant, record_id) VALUES (?, ?)'),
    deleteTenantKeys: prepare('DELETE FROM data_keys WHERE tenant = ?'),
    deleteTenantShredded: prepare('DELETE FROM shredded WHERE tenant = ?'),
    pseudonym: prepare('SELECT pseudonym FROM subject_pseudonyms WHERE tenant = ? AND subject_mac = ?').pluck(),
    deletePseudonym: prepare('DELETE FROM subject_pseudonyms WHERE tenant = ? AND subject_mac = ?'),
    deleteTenantPseudonyms: prepare('DELETE FROM subject_pseudonyms WHERE tenant = ?'),
  };
}

/**
 * Which of these records' data keys are gone: every one of a destroyed tenant (its keys went with it), else
 * those marked shredded. One answer for both vaults' `shreddedAmong` and `isShredded`.
 */
export function shreddedIds(
  tenantDestroyed: boolean,
  isShredded: { get(tenant: string, recordId: string): unknown },
  tenant: string,
  recordIds: readonly string[],
): Set<string> {
  if (tenantDestroyed) return new Set(recordIds);
  return new Set(recordIds.filter((id) => isShredded.get(tenant, id)));
}
