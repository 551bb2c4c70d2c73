/**
 * One SQLite file per tenant partition. Times are epoch milliseconds so range
 * predicates compare numbers, not ISO strings with differing offsets.
 * `rowid` is AUTOINCREMENT: a replaced or purged row's key is never reused,
 * so a stale key left in the vector graph can never point at another record.
 */
import type Database from 'better-sqlite3';

export const TENANT_SCHEMA = `
CREATE TABLE IF NOT EXISTS memories (
  rowid INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  sensitivity_rank INTEGER NOT NULL,
  owner TEXT NOT NULL,
  project TEXT,
  retention_class TEXT,
  purpose_set TEXT,
  valid_from INTEGER NOT NULL,
  valid_to INTEGER,
  recorded_at INTEGER NOT NULL,
  expires_at INTEGER,
  record TEXT NOT NULL,
  vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_by_status ON memories (status, sensitivity_rank);
-- Purposes used to live in a side table; the purpose_set column replaced it.
DROP TABLE IF EXISTS memory_purposes;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(body, tokenize = 'unicode61');
-- Document frequency per token, to plan BM25 queries (see TenantPartition.searchText). A view over
-- the FTS index itself, so it costs nothing on write and never outlives a purged document's terms.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_vocab USING fts5vocab(memories_fts, 'row');
DROP TABLE IF EXISTS term_df;
CREATE TABLE IF NOT EXISTS partition_state (
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
INSERT OR IGNORE INTO partition_state (key, value) VALUES ('generation', 0), ('graph_generation', -1);
`;

export const META_SCHEMA = `
CREATE TABLE IF NOT EXISTS checkpoints (
  name TEXT PRIMARY KEY,
  position INTEGER NOT NULL
);
`;

/**
 * Policy attributes added after the first release. CREATE TABLE IF NOT EXISTS
 * leaves an older file's table as it was, so missing columns are added here
 * and backfilled from the stored record in the same transaction: a row with a
 * NULL column would otherwise silently fail (project) or pass nothing
 * (retention class) in the policy filter.
 */
const ADDED_COLUMNS = [
  { name: 'project', backfill: `json_extract(record, '$.policy.project')` },
  { name: 'retention_class', backfill: `json_extract(record, '$.retention.class')` },
  {
    name: 'purpose_set',
    backfill: `char(31) || (SELECT group_concat(value, char(31)) FROM json_each(record, '$.policy.purposes')) || char(31)`,
  },
] as const;

/** The record's purposes as one column, `\x1f`-delimited on both ends, so a purpose test is one instr() per row. */
export const purposeSet = (purposes: readonly string[]) => `\x1f${purposes.join('\x1f')}\x1f`;
export const purposeNeedle = (purpose: string) => `\x1f${purpose}\x1f`;

export function migrateTenantSchema(db: Database.Database): void {
  const columns = new Set((db.pragma('table_info(memories)') as { name: string }[]).map((c) => c.name));
  const missing = ADDED_COLUMNS.filter((c) => !columns.has(c.name));
  if (missing.length === 0) return;
  db.transaction(() => {
    for (const column of missing) {
      db.exec(`ALTER TABLE memories ADD COLUMN ${column.name} TEXT`);
      db.exec(`UPDATE memories SET ${column.name} = ${column.backfill}`);
    }
  })();
}
