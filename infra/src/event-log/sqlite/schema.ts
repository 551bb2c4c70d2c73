import type Database from 'better-sqlite3';

/**
 * Positions are an AUTOINCREMENT rowid: SQLite serialises writers, so a
 * position is allocated and committed under the same write lock and a reader
 * never sees a gap that fills in later. AUTOINCREMENT (not a plain rowid) keeps
 * positions from being reused after the newest stream is hard-deleted, which
 * would otherwise break consumers' durable checkpoints.
 *
 * Event ids are unique per stream, as in EventStoreDB. A global unique index
 * on random UUIDs would touch a random index page per event and cut append
 * throughput by more than half; (stream, id) stays clustered per batch.
 */
const schema = `
CREATE TABLE IF NOT EXISTS events (
  position INTEGER PRIMARY KEY AUTOINCREMENT,
  stream   TEXT    NOT NULL,
  revision INTEGER NOT NULL,
  id       TEXT    NOT NULL,
  type     TEXT    NOT NULL,
  data     TEXT    NOT NULL,
  metadata TEXT    NOT NULL,
  created  INTEGER NOT NULL,
  UNIQUE (stream, revision),
  UNIQUE (stream, id)
);
CREATE TABLE IF NOT EXISTS deleted_streams (
  stream TEXT PRIMARY KEY
) WITHOUT ROWID;
`;

export function openEventLogDatabase(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // Checkpoint the WAL every ~40 MiB instead of 4 MiB: fewer fsyncs on the append path. Hard deletes
  // still checkpoint (TRUNCATE) at once, so erased bytes never wait for this.
  db.pragma('wal_autocheckpoint = 10000');
  // Hard deletes must not leave event content in free pages (erasure guarantee).
  db.pragma('secure_delete = ON');
  db.exec(schema);
}
