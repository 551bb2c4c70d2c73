/**
 * One SQLite file per tenant partition. Times are epoch milliseconds so range
 * predicates compare numbers, not ISO strings with differing offsets.
 * `rowid` is AUTOINCREMENT: a replaced or purged row's key is never reused,
 * so a stale key left in the vector graph can never point at another record.
 *
 * Each version of a record is a row, with the transaction time it was
 * current: from `tx_from` until `tx_to` (NULL while it is the current
 * version). Queries see current rows, or with `knownAsOf` the rows current
 * then (bitemporal recall, paper, section 6.4 'Consistency and visibility').
 */
import type Database from 'better-sqlite3';
import { indexKeyOf, restrictionKeys, scopeKeys, type MemoryRecord } from '@elma/domain';

/**
 * The `fact_key` column: the key `currentFacts` finds a record by, a fact's
 * entity and attribute or a procedure's name (`indexKeyOf`); null when it has neither.
 */
export const factKeyOf = (record: MemoryRecord): string | null => indexKeyOf(record);

/**
 * BM25 terms, one FTS row per memories row (same rowid): `documentTerms` joined
 * by spaces. `partition_state.text_analysis` names the analysis they were
 * made with (`documentAnalysisCode`); absent in files from before it, whose
 * terms were the unstemmed words without date words.
 *
 * Contentless (`content=''`): FTS5 keeps only its index, not a second copy of
 * the terms (they can be derived again from the stored record), and
 * `contentless_delete=1` lets a row be deleted by rowid alone. Files from
 * before kept the terms in `memories_fts_content`; their table is rebuilt on
 * open (see `ftsStoresContent`).
 */
export const TENANT_FTS_SCHEMA = `
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(body, content = '', contentless_delete = 1, tokenize = 'unicode61');
-- Document frequency per token, to plan BM25 queries (see TenantPartition.searchText). A view over
-- the FTS index itself, so it costs nothing on write and never outlives a purged document's terms.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_vocab USING fts5vocab(memories_fts, 'row');
`;

/** Whether the partition's FTS table still stores its text (a file from before it was contentless): then it is rebuilt. */
export function ftsStoresContent(db: Database.Database): boolean {
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'memories_fts_content'`).get() !== undefined;
}

export const TENANT_SCHEMA = `
CREATE TABLE IF NOT EXISTS memories (
  rowid INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL,
  version INTEGER NOT NULL,
  tx_from INTEGER NOT NULL,
  tx_to INTEGER,
  fact_key TEXT,
  tokens INTEGER,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  sensitivity_rank INTEGER NOT NULL,
  owner TEXT NOT NULL,
  project TEXT,
  retention_class TEXT,
  purpose_set TEXT,
  lineage_set TEXT,
  scope_set TEXT,
  valid_from INTEGER NOT NULL,
  valid_to INTEGER,
  recorded_at INTEGER NOT NULL,
  expires_at INTEGER,
  subject TEXT,
  session TEXT,
  record TEXT NOT NULL,
  vector BLOB NOT NULL,
  vector_model TEXT,
  pending_since INTEGER
);
CREATE INDEX IF NOT EXISTS memories_by_status ON memories (status, sensitivity_rank);
-- Purposes used to live in a side table; the purpose_set column replaced it.
DROP TABLE IF EXISTS memory_purposes;
${TENANT_FTS_SCHEMA}DROP TABLE IF EXISTS term_df;
CREATE TABLE IF NOT EXISTS usage (
  id TEXT PRIMARY KEY,
  retrieved INTEGER NOT NULL DEFAULT 0,
  adopted INTEGER NOT NULL DEFAULT 0,
  last_used_at INTEGER
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS partition_state (
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
-- purge_pending: 1 from the commit of a purge's row deletion until its last step (see TenantPartition.purge).
INSERT OR IGNORE INTO partition_state (key, value) VALUES ('generation', 0), ('graph_generation', -1), ('purge_pending', 0);
-- The embedder model whose vectors the partition holds (one row); set when the partition is created.
CREATE TABLE IF NOT EXISTS vector_model (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  model TEXT NOT NULL
);
-- The graph file as it was last written: a file whose size or digest differs is never loaded (usearch trusts its bytes).
CREATE TABLE IF NOT EXISTS graph_file (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  generation INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  nodes INTEGER NOT NULL,
  removed INTEGER NOT NULL
);
`;

export const META_SCHEMA = `
CREATE TABLE IF NOT EXISTS checkpoints (
  name TEXT PRIMARY KEY,
  position INTEGER NOT NULL
);
-- Tenants whose partition SQLite found corrupt (code: SQLITE_CORRUPT, SQLITE_NOTADB...); until a rebuild drops it.
CREATE TABLE IF NOT EXISTS quarantined_tenants (
  tenant TEXT PRIMARY KEY,
  code TEXT NOT NULL,
  since INTEGER NOT NULL
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
  // The subject and conversation of a record: what `neighbours` looks records up by (see memories_timeline).
  { name: 'subject', backfill: `json_extract(record, '$.subject')` },
  { name: 'session', backfill: `json_extract(record, '$.session')` },
  {
    name: 'purpose_set',
    backfill: `char(31) || (SELECT group_concat(value, char(31)) FROM json_each(record, '$.policy.purposes')) || char(31)`,
  },
] as const;

/** The record's purposes as one column, `\x1f`-delimited on both ends, so a purpose test is one instr() per row. */
export const purposeSet = (purposes: readonly string[]) => `\x1f${purposes.join('\x1f')}\x1f`;
export const purposeNeedle = (purpose: string) => `\x1f${purpose}\x1f`;

/** `restrictionKeys` of the record (what a legal hold can name of it and its ancestors), delimited like `purpose_set`. */
export const lineageSet = (record: MemoryRecord) => purposeSet(restrictionKeys(record));
export const lineageNeedle = purposeNeedle;

/** `scopeKeys` of the record (what a recall's `filter` can narrow to), delimited like `purpose_set`. */
export const scopeSet = (record: MemoryRecord) => purposeSet(scopeKeys(record));
export const scopeNeedle = purposeNeedle;

/** The model of vectors stored before partitions recorded one: never the configured model, so such a partition needs a reindex. */
export const UNRECORDED_MODEL = '(unrecorded)';

export function migrateTenantSchema(db: Database.Database): void {
  const columns = new Set((db.pragma('table_info(memories)') as { name: string }[]).map((c) => c.name));
  const missing = ADDED_COLUMNS.filter((c) => !columns.has(c.name));
  if (missing.length > 0) {
    db.transaction(() => {
      for (const column of missing) {
        db.exec(`ALTER TABLE memories ADD COLUMN ${column.name} TEXT`);
        db.exec(`UPDATE memories SET ${column.name} = ${column.backfill}`);
      }
    })();
  }
  if (!columns.has('version')) migrateToVersionRows(db);
  if (!columns.has('fact_key')) {
    // Computed in JS: the key's Unicode normalisation (NFKC) is not available in SQL. A table rebuilt
    // just above already has the (empty) column.
    const rebuilt = (db.pragma('table_info(memories)') as { name: string }[]).some((c) => c.name === 'fact_key');
    db.transaction(() => {
      if (!rebuilt) db.exec('ALTER TABLE memories ADD COLUMN fact_key TEXT');
      const update = db.prepare('UPDATE memories SET fact_key = ? WHERE rowid = ?');
      for (const row of db.prepare(`SELECT rowid, record FROM memories WHERE json_extract(record, '$.content.fact') IS NOT NULL`).all() as {
        rowid: number;
        record: string;
      }[]) {
        update.run(factKeyOf(JSON.parse(row.record) as MemoryRecord), row.rowid);
      }
    })();
  }
  // Lineage keys came later: computed in JS from the stored record, as restrictionKeys does for new rows.
  if (!(db.pragma('table_info(memories)') as { name: string }[]).some((c) => c.name === 'lineage_set')) {
    db.transaction(() => {
      db.exec('ALTER TABLE memories ADD COLUMN lineage_set TEXT');
      backfillLineage(db);
    })();
  }
  // Scope keys came later: computed in JS from the stored record. What older records lack (their sources,
  // their ancestry's sessions) a rebuild of the partition from the log fills (rows format 3).
  if (!(db.pragma('table_info(memories)') as { name: string }[]).some((c) => c.name === 'scope_set')) {
    db.transaction(() => {
      db.exec('ALTER TABLE memories ADD COLUMN scope_set TEXT');
      backfillScope(db);
    })();
  }
  // Token counts came later; rows indexed before have none and are counted at recall instead.
  if (!(db.pragma('table_info(memories)') as { name: string }[]).some((c) => c.name === 'tokens'))
    db.exec('ALTER TABLE memories ADD COLUMN tokens INTEGER');
  // Vectors made in the background came later: a row's vector is an empty BLOB until `setVectors`, and
  // `vector_model` names the model that made it (NULL: pending since `pending_since`). Rows from before
  // recorded no model: they are marked UNRECORDED_MODEL, so the dense route ignores them until a reindex.
  if (!(db.pragma('table_info(memories)') as { name: string }[]).some((c) => c.name === 'vector_model')) {
    db.transaction(() => {
      db.exec('ALTER TABLE memories ADD COLUMN vector_model TEXT');
      db.exec('ALTER TABLE memories ADD COLUMN pending_since INTEGER');
      db.prepare('UPDATE memories SET vector_model = ?').run(UNRECORDED_MODEL);
      if (db.prepare('SELECT 1 FROM memories LIMIT 1').get())
        db.prepare('INSERT OR IGNORE INTO vector_model (one, model) VALUES (1, ?)').run(UNRECORDED_MODEL);
    })();
  }
  db.exec(`
    CREATE INDEX IF NOT EXISTS memories_pending ON memories (pending_since) WHERE vector_model IS NULL AND tx_to IS NULL;
    CREATE INDEX IF NOT EXISTS memories_by_fact ON memories (fact_key) WHERE fact_key IS NOT NULL AND tx_to IS NULL;
    CREATE UNIQUE INDEX IF NOT EXISTS memories_current ON memories (id) WHERE tx_to IS NULL;
    CREATE UNIQUE INDEX IF NOT EXISTS memories_versions ON memories (id, version);
    -- A conversation's turns in time order: neighbours() finds the turns around a hit with one seek each.
    CREATE INDEX IF NOT EXISTS memories_timeline ON memories (subject, session, valid_from) WHERE kind = 'episodic';
    -- An erasure locates a subject's records (as subject or as owner) with a seek, not a scan (lineageOf).
    CREATE INDEX IF NOT EXISTS memories_by_subject ON memories (subject) WHERE tx_to IS NULL;
    CREATE INDEX IF NOT EXISTS memories_by_owner ON memories (owner) WHERE tx_to IS NULL;
    -- Listings page through current records by the time they were first recorded, then id (list()).
    CREATE INDEX IF NOT EXISTS memories_listing ON memories (recorded_at, id) WHERE tx_to IS NULL;
  `);
  // Scope keys in a table of their own came later: filled from each row's scope_set, which holds the same keys.
  if (!db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'scope_keys'`).get()) {
    db.transaction(() => {
      db.exec(SCOPE_KEYS_SCHEMA);
      const insert = db.prepare('INSERT OR IGNORE INTO scope_keys (key, row) VALUES (?, ?)');
      for (const row of db.prepare('SELECT rowid, scope_set FROM memories WHERE scope_set IS NOT NULL').all() as {
        rowid: number;
        scope_set: string;
      }[]) {
        for (const key of keysOfScopeSet(row.scope_set)) insert.run(key, row.rowid);
      }
    })();
  }
  if (!db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memory_inputs'`).get()) {
    db.transaction(() => {
      db.exec(MEMORY_INPUTS_SCHEMA);
      for (const path of ['$.provenance.parentIds', '$.provenance.sourceEventIds'])
        db.prepare(
          `INSERT OR IGNORE INTO memory_inputs (input, row) SELECT j.value, m.rowid FROM memories m, json_each(m.record, ?) j`,
        ).run(path);
    })();
  }
}

/**
 * Each row's lineage inputs (its parent records' and source events' ids), so
 * an erasure's closure walk finds a record's children with a seek (lineageOf)
 * instead of reading the lineage of the whole partition. Ids only, no content;
 * a row's entries go with it.
 */
export const MEMORY_INPUTS_SCHEMA = `
CREATE TABLE IF NOT EXISTS memory_inputs (
  input TEXT NOT NULL,
  row INTEGER NOT NULL,
  PRIMARY KEY (input, row)
) WITHOUT ROWID;
`;

/**
 * Each row's scope keys (`scopeKeys`, as its `scope_set` holds them), so a
 * scoped search finds the rows of a subject, session or source with a seek
 * per key (`TenantPartition.scopedRows`) instead of an instr() over every
 * row. Written and deleted with the row, in the same transaction; a purged
 * row leaves no key behind.
 */
export const SCOPE_KEYS_SCHEMA = `
CREATE TABLE IF NOT EXISTS scope_keys (
  key TEXT NOT NULL,
  row INTEGER NOT NULL,
  PRIMARY KEY (key, row)
) WITHOUT ROWID;
`;

/** The keys a `scope_set` value holds (see `scopeSet`): no key contains the delimiter. */
export const keysOfScopeSet = (set: string): string[] => set.split('\x1f').filter((key) => key !== '');

/** The ids `memory_inputs` holds for a record (see MEMORY_INPUTS_SCHEMA). */
export const lineageInputs = (record: MemoryRecord): string[] => [
  ...new Set([...record.provenance.parentIds, ...record.provenance.sourceEventIds]),
];

function backfillLineage(db: Database.Database): void {
  const update = db.prepare('UPDATE memories SET lineage_set = ? WHERE rowid = ?');
  for (const row of db.prepare('SELECT rowid, record FROM memories WHERE lineage_set IS NULL').all() as {
    rowid: number;
    record: string;
  }[]) {
    update.run(lineageSet(JSON.parse(row.record) as MemoryRecord), row.rowid);
  }
}

/** Rows of format 2 keep their subject and session in columns only, so the record is put back together from both. */
function backfillScope(db: Database.Database): void {
  const update = db.prepare('UPDATE memories SET scope_set = ? WHERE rowid = ?');
  const rows = db.prepare('SELECT rowid, subject, session, record FROM memories WHERE scope_set IS NULL').all() as {
    rowid: number;
    subject: string | null;
    session: string | null;
    record: string;
  }[];
  for (const row of rows) {
    const record = { subject: row.subject, ...(row.session === null ? {} : { session: row.session }), ...JSON.parse(row.record) };
    update.run(scopeSet(record as MemoryRecord), row.rowid);
  }
}

/**
 * A file from before version rows had one row per id (UNIQUE), which SQLite
 * cannot drop in place: the table is rebuilt with the same rowids (so FTS
 * rows still match), each row becoming its record's current version. The
 * generation moves on, so the vector graph is rebuilt from the rows.
 */
function migrateToVersionRows(db: Database.Database): void {
  const create = TENANT_SCHEMA.slice(
    TENANT_SCHEMA.indexOf('CREATE TABLE IF NOT EXISTS memories ('),
    TENANT_SCHEMA.indexOf(');') + 2,
  ).replace('CREATE TABLE IF NOT EXISTS memories (', 'CREATE TABLE memories_versioned (');
  const kept = [
    'id',
    'kind',
    'status',
    'sensitivity_rank',
    'owner',
    'project',
    'retention_class',
    'purpose_set',
    'valid_from',
    'valid_to',
    'recorded_at',
    'expires_at',
    'subject',
    'session',
    'record',
    'vector',
  ];
  const sequence = (db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'memories'`).pluck().get() as number | undefined) ?? 0;
  db.transaction(() => {
    db.exec(create);
    db.exec(`INSERT INTO memories_versioned (rowid, ${kept.join(', ')}, version, tx_from, tx_to)
             SELECT rowid, ${kept.join(', ')}, coalesce(json_extract(record, '$.version'), 1), recorded_at, NULL FROM memories`);
    db.exec(`DROP TABLE memories; ALTER TABLE memories_versioned RENAME TO memories;`);
    backfillLineage(db);
    backfillScope(db);
    // Keys of purged rows stay retired (see the AUTOINCREMENT note above).
    db.prepare(`UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'memories'`).run(sequence);
    db.exec(`CREATE INDEX IF NOT EXISTS memories_by_status ON memories (status, sensitivity_rank);`);
    db.exec(`UPDATE partition_state SET value = value + 1 WHERE key = 'generation'`);
  })();
}
