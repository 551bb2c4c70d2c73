import type Database from 'better-sqlite3';
import { FORMAT_VERSIONS } from '@elma/domain';

/**
 * Streams are numbered in the order they are created (`streams`), and events
 * name their stream by that number. Two of every three events open a new
 * stream with a random name (a subject pseudonym, a record id); keyed by the
 * name, every such event was a random insert into both unique indexes below,
 * whose pages then spread over the whole file as it grew, and the name was
 * stored three times per event. Keyed by the number, new streams land at the
 * end of both indexes, and only `streams` holds (and indexes) the name once.
 *
 * Positions are an AUTOINCREMENT rowid: SQLite serialises writers, so a
 * position is allocated and committed under the same write lock and a reader
 * never sees a gap that fills in later. AUTOINCREMENT (not a plain rowid) keeps
 * positions from being reused after the newest stream is hard-deleted, which
 * would otherwise break consumers' durable checkpoints.
 *
 * Event ids are unique per stream, as in EventStoreDB, and kept as 16 bytes
 * when they are UUIDs (as text otherwise; see `storedId`). A global unique
 * index on random UUIDs would touch a random index page per event.
 *
 * `events` is a view with the stream's name and the id as text, for reading
 * the file by hand (and by tests); the adapter reads the tables.
 */
const tables = `
CREATE TABLE IF NOT EXISTS streams (
  id   INTEGER PRIMARY KEY,
  name TEXT    NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS event_rows (
  position INTEGER PRIMARY KEY AUTOINCREMENT,
  stream   INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  id       BLOB    NOT NULL,
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

const hexId = 'lower(hex(e.id))';
const view = `
CREATE VIEW IF NOT EXISTS events AS
SELECT e.position, s.name AS stream, e.revision,
       CASE WHEN typeof(e.id) = 'blob' THEN
         substr(${hexId}, 1, 8) || '-' || substr(${hexId}, 9, 4) || '-' || substr(${hexId}, 13, 4) || '-' ||
         substr(${hexId}, 17, 4) || '-' || substr(${hexId}, 21, 12)
       ELSE e.id END AS id,
       e.type, e.data, e.metadata, e.created
FROM event_rows e JOIN streams s ON s.id = e.stream;
`;

export function openEventLogDatabase(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // Checkpoint the WAL every ~40 MiB instead of 4 MiB: fewer fsyncs on the append path. Hard deletes
  // still checkpoint (TRUNCATE) at once, so erased bytes never wait for this.
  db.pragma('wal_autocheckpoint = 10000');
  // Hard deletes must not leave event content in free pages (erasure guarantee).
  db.pragma('secure_delete = ON');
  db.function('elma_stored_id', { deterministic: true }, (id: unknown) => storedId(String(id)));
  db.transaction(() => {
    const legacy = isTable(db, 'events');
    db.exec(tables);
    if (legacy) moveToStreamsTable(db);
    db.exec(view);
    // A file whose subjects already carry pseudonyms is now in this build's layout; an older one (0) keeps its
    // number until the pseudonym migration writes its own (see `layoutStamp`). From 2 to 3 only the meaning
    // changes (extracted first versions are no longer appended: an older build's rebuild would miss them).
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version >= 1 && version < FORMAT_VERSIONS.eventLog) db.pragma(`user_version = ${layoutStamp(version)}`);
  }).immediate();
}

/**
 * The `user_version` a layout migration to `version` writes: a file past the pseudonym migration is in this
 * build's layout (`FORMAT_VERSIONS.eventLog`: the streams table, and no appended extracted first versions).
 */
export function layoutStamp(version: number): number {
  return version >= 1 ? Math.max(version, FORMAT_VERSIONS.eventLog) : version;
}

/**
 * A file from before the streams table (one `events` table keyed by names): its
 * events are copied with their positions, revisions and ids (so checkpoints
 * stay valid), streams numbered in the order they began, and the position
 * counter carried over (it may be past the last event, after a hard delete).
 * Runs inside the opening transaction: a crash leaves the old file whole.
 */
function moveToStreamsTable(db: Database.Database): void {
  const sequence = (table: string) =>
    (db.prepare('SELECT max(seq) FROM sqlite_sequence WHERE name = ?').pluck().safeIntegers(true).get(table) as bigint | null) ?? 0n;
  const counter = sequence('events');
  db.exec(`
    INSERT INTO streams (name) SELECT stream FROM events GROUP BY stream ORDER BY min(position);
    INSERT INTO event_rows (position, stream, revision, id, type, data, metadata, created)
      SELECT e.position, s.id, e.revision, elma_stored_id(e.id), e.type, e.data, e.metadata, e.created
      FROM events e JOIN streams s ON s.name = e.stream ORDER BY e.position;
    DROP TABLE events;
  `);
  const copied = sequence('event_rows');
  db.prepare("DELETE FROM sqlite_sequence WHERE name IN ('events', 'event_rows')").run();
  db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('event_rows', ?)").run(counter > copied ? counter : copied);
}

function isTable(db: Database.Database, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** An event id as stored: a lower-case UUID as its 16 bytes, anything else as the text itself (so it reads back the same). */
export function storedId(id: string): Buffer | string {
  return UUID.test(id) ? Buffer.from(id.replaceAll('-', ''), 'hex') : id;
}

/** The event id a stored one stands for. */
export function readId(stored: Buffer | string): string {
  if (typeof stored === 'string') return stored;
  const hex = stored.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
