/**
 * One SQLite file per tenant partition. Times are epoch milliseconds so range
 * predicates compare numbers, not ISO strings with differing offsets.
 * `rowid` is AUTOINCREMENT: a replaced or purged row's key is never reused,
 * so a stale key left in the vector graph can never point at another record.
 */
export const TENANT_SCHEMA = `
CREATE TABLE IF NOT EXISTS memories (
  rowid INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  sensitivity_rank INTEGER NOT NULL,
  owner TEXT NOT NULL,
  valid_from INTEGER NOT NULL,
  valid_to INTEGER,
  recorded_at INTEGER NOT NULL,
  expires_at INTEGER,
  record TEXT NOT NULL,
  vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_purposes (
  memory_rowid INTEGER NOT NULL,
  purpose TEXT NOT NULL,
  PRIMARY KEY (memory_rowid, purpose)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memories_by_status ON memories (status, sensitivity_rank);
CREATE INDEX IF NOT EXISTS purposes_by_purpose ON memory_purposes (purpose, memory_rowid);
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
