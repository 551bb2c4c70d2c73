import type Database from 'better-sqlite3';

/** Creates the tables of `events.db` as laid out before the streams table: names in every row, ids as text. */
export function createLegacyEventTables(db: Database.Database): Database.Statement {
  db.exec(`
    CREATE TABLE events (
      position INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, revision INTEGER NOT NULL, id TEXT NOT NULL,
      type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, created INTEGER NOT NULL,
      UNIQUE (stream, revision), UNIQUE (stream, id));
    CREATE TABLE deleted_streams (stream TEXT PRIMARY KEY) WITHOUT ROWID;`);
  return db.prepare('INSERT INTO events (stream, revision, id, type, data, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)');
}
