import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { ownerOnlyDatabaseFile } from '../../files/owner-only';
import {
  FORMAT_VERSIONS,
  FormatTooNew,
  NO_STREAM,
  StreamDeleted,
  planAppend,
  type StoredRef,
  type AppendRequest,
  type AppendResult,
  type Direction,
  type EventData,
  type EventFilter,
  type EventLog,
  type ExpectedRevision,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
} from '@elma/domain';
import { layoutStamp, openEventLogDatabase, readId, storedId } from './schema';
import { SqliteSubscription, type ScanResult } from './sqlite-subscription';

const PAGE_SIZE = 512;
const MAX_INT64 = 9_223_372_036_854_775_807n;

interface EventRow {
  position: bigint;
  stream: string;
  revision: bigint;
  id: Buffer | string;
  type: string;
  data: string;
  metadata: string;
  created: bigint;
}

/** A readAll query: a statement cached per filter shape plus this filter's parameters. */
interface AllQuery {
  statement: Database.Statement;
  params: unknown[];
}

/** A stream's events, read by the stream's number (the name is known). */
const streamColumns = 'position, ? AS stream, revision, id, type, data, metadata, created';
/** Events of any stream, with their stream's name: `event_rows` drives the join (in position order). */
const allColumns = 'e.position, s.name AS stream, e.revision, e.id, e.type, e.data, e.metadata, e.created';
const allFrom = 'event_rows e CROSS JOIN streams s ON s.id = e.stream';

/**
 * The data of a stream's last event, read from an events.db file without opening it as a log (nothing is written,
 * no layout is migrated): for commands that look at a data folder ELMA is not running on (`elma restore` reads the
 * live folder's ledger witness before it replaces it). Undefined when the stream is empty or the file is of a layout
 * without a streams table.
 */
export function lastEventData(eventsDb: string, stream: string): unknown {
  const db = new Database(eventsDb, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('event_rows', 'streams')")
      .pluck()
      .get();
    if (tables !== 2) return undefined;
    const row = db.prepare(`SELECT e.data FROM ${allFrom} WHERE s.name = ? ORDER BY e.revision DESC LIMIT 1`).get(stream) as
      { data: string } | undefined;
    return row ? JSON.parse(row.data) : undefined;
  } finally {
    db.close();
  }
}

/** What a layout migration sees of the file. */
export interface LayoutFile {
  streamNames(prefix: string): string[];
  readStream(stream: string): RecordedEvent[];
  plainDeletedNames(): string[];
}

export interface SqliteEventLogOptions {
  /** How often a live subscription polls for writes by other processes (in-process appends wake it at once). */
  pollIntervalMs?: number;
}

/**
 * The embedded event log. Every write runs in one IMMEDIATE transaction so the
 * expected-revision check and the insert see the same state; positions are
 * assigned under SQLite's single-writer lock and therefore committed in order.
 */
export class SqliteEventLog implements EventLog {
  static open(path: string, options: SqliteEventLogOptions = {}): SqliteEventLog {
    return new SqliteEventLog(path, options);
  }

  private readonly db: Database.Database;
  private readonly pollIntervalMs: number;
  private readonly subscriptions = new Set<SqliteSubscription>();
  private readonly allStatements = new Map<string, Database.Statement>();
  private readonly statements;
  private readonly appendTransaction;
  private readonly deleteTransaction;
  private readonly scanTransaction;

  constructor(
    readonly path: string,
    options: SqliteEventLogOptions = {},
  ) {
    this.pollIntervalMs = options.pollIntervalMs ?? 25;
    ownerOnlyDatabaseFile(path);
    this.db = new Database(path, { timeout: 5_000 });
    // A log laid out by a newer build is refused before anything is written to it (not even the journal mode).
    const layout = this.layoutVersion();
    if (layout > FORMAT_VERSIONS.eventLog) {
      this.db.close();
      throw new FormatTooNew('eventLog', layout, 'events.db');
    }
    openEventLogDatabase(this.db);
    const prepare = (sql: string) => this.db.prepare(sql).safeIntegers(true);
    this.statements = {
      // Older files stored the name itself; both forms are honoured.
      isDeleted: this.db.prepare('SELECT 1 FROM deleted_streams WHERE stream IN (?, ?)').pluck(),
      streamNumber: prepare('SELECT id FROM streams WHERE name = ?').pluck(),
      newStream: prepare('INSERT INTO streams (name) VALUES (?)'),
      last: prepare('SELECT revision, position FROM event_rows WHERE stream = ? ORDER BY revision DESC LIMIT 1'),
      byId: prepare('SELECT revision, position FROM event_rows WHERE stream = ? AND id = ?'),
      insert: prepare('INSERT INTO event_rows (stream, revision, id, type, data, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      head: prepare("SELECT seq FROM sqlite_sequence WHERE name = 'event_rows'").pluck(),
      streamForwards: prepare(`SELECT ${streamColumns} FROM event_rows WHERE stream = ? AND revision >= ? ORDER BY revision ASC LIMIT ?`),
      streamBackwards: prepare(`SELECT ${streamColumns} FROM event_rows WHERE stream = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`),
      markDeleted: this.db.prepare('INSERT OR IGNORE INTO deleted_streams (stream) VALUES (?)'),
      deleteEvents: this.db.prepare('DELETE FROM event_rows WHERE stream = ?'),
      deleteStream: this.db.prepare('DELETE FROM streams WHERE id = ?'),
    };
    this.appendTransaction = this.db.transaction((requests: AppendRequest[]) => requests.map((request) => this.appendOne(request)));
    this.deleteTransaction = this.db.transaction((names: readonly string[]) => {
      for (const stream of names) {
        this.statements.markDeleted.run(deletedName(stream));
        const number = this.streamNumber(stream);
        if (number === undefined) continue;
        this.statements.deleteEvents.run(number);
        this.statements.deleteStream.run(number);
      }
    });
    // One read transaction so the page and the head come from the same snapshot.
    this.scanTransaction = this.db.transaction((query: AllQuery, after: bigint, limit: number): { rows: EventRow[]; head: bigint } => ({
      rows: readPage(query, after, limit),
      head: this.head(),
    }));
  }

  async append(stream: string, events: EventData[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    const [result] = await this.appendMany([{ stream, events, expectedRevision: options.expectedRevision }]);
    return result;
  }

  async appendMany(requests: AppendRequest[]): Promise<AppendResult[]> {
    const results = this.appendTransaction.immediate(requests);
    if (results.some((r) => !r.duplicate)) this.wakeSubscriptions();
    return results;
  }

  async *readStream(stream: string, options: ReadStreamOptions = {}): AsyncIterable<RecordedEvent> {
    const backwards = options.direction === 'backwards';
    const from = options.fromRevision ?? (backwards ? 'end' : 'start');
    let remaining = options.maxCount ?? Infinity;
    let cursor: bigint;
    if (from === 'start') cursor = 0n;
    else if (from === 'end') {
      if (!backwards) return;
      cursor = MAX_INT64;
    } else cursor = from;
    const query = backwards ? this.statements.streamBackwards : this.statements.streamForwards;
    while (remaining > 0) {
      // Looked up again per page: the stream may be deleted (and its number reused) between pages.
      const number = this.streamNumber(stream);
      if (number === undefined) return;
      const limit = Math.min(PAGE_SIZE, remaining);
      const rows = query.all(stream, number, cursor, limit) as EventRow[];
      for (const row of rows) yield toRecorded(row);
      if (rows.length < limit) return;
      remaining -= rows.length;
      const last = rows[rows.length - 1].revision;
      cursor = backwards ? last - 1n : last + 1n;
      if (cursor < 0n) return;
    }
  }

  async *readAll(options: ReadAllOptions = {}): AsyncIterable<RecordedEvent> {
    const direction = options.direction ?? 'forwards';
    const backwards = direction === 'backwards';
    const from = options.fromPosition ?? (backwards ? 'end' : 'start');
    let remaining = options.maxCount ?? Infinity;
    let cursor: bigint;
    if (from === 'start') {
      if (backwards) return;
      cursor = 0n;
    } else if (from === 'end') {
      if (!backwards) return;
      cursor = MAX_INT64;
    } else cursor = from;
    const query = this.allQuery(direction, options.filter);
    while (remaining > 0) {
      const limit = Math.min(PAGE_SIZE, remaining);
      const rows = readPage(query, cursor, limit);
      for (const row of rows) yield toRecorded(row);
      if (rows.length < limit) return;
      remaining -= rows.length;
      cursor = rows[rows.length - 1].position;
    }
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    // 'end' is resolved now, not on the first `next()`, so that an append made
    // right after subscribing is delivered.
    const from = options.fromPosition;
    const after = from === 'start' ? 0n : from === 'end' ? this.head() : from;
    const query = this.allQuery('forwards', options.filter);
    const subscription = new SqliteSubscription({
      after,
      pageSize: PAGE_SIZE,
      pollIntervalMs: this.pollIntervalMs,
      scan: (position) => this.scan(query, position),
      onClose: (s) => this.subscriptions.delete(s),
    });
    this.subscriptions.add(subscription);
    return subscription;
  }

  async deleteStream(stream: string): Promise<void> {
    await this.deleteStreams([stream]);
  }

  /** One transaction and one WAL truncation for the whole batch: an erasure deletes a stream per erased record. */
  async deleteStreams(streams: readonly string[]): Promise<void> {
    if (streams.length === 0) return;
    this.deleteTransaction.immediate(streams);
    await this.truncateWal();
  }

  async headPosition(): Promise<bigint> {
    return this.head();
  }

  /** Read-only views of the file that a layout migration plans from (inside its transaction, or before it). */
  layoutFile(): LayoutFile {
    return {
      // A range on the names' index: the names after the prefix and before its successor.
      streamNames: (prefix: string) =>
        this.db
          .prepare('SELECT name FROM streams WHERE name >= ? AND name < ?')
          .pluck()
          .all(prefix, prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)) as string[],
      readStream: (stream: string) => {
        const number = this.streamNumber(stream);
        return number === undefined
          ? []
          : (this.statements.streamForwards.all(stream, number, 0n, MAX_INT64) as EventRow[]).map(toRecorded);
      },
      // Files from before the list kept hashes hold plain names.
      plainDeletedNames: () =>
        this.db.prepare("SELECT stream FROM deleted_streams WHERE stream NOT LIKE 'sha256:%'").pluck().all() as string[],
    };
  }

  /** The data folder's layout version (SQLite `user_version`; 0 for a file made before versions were kept). */
  layoutVersion(): number {
    return this.db.pragma('user_version', { simple: true }) as number;
  }

  /**
   * Moves the file to a new layout in one transaction, unless it is there
   * already: `plan` sees the file as it is inside the transaction and returns
   * streams to rename and events whose data to replace, in place (positions,
   * revisions and ids stay, so checkpoints stay valid). A crash leaves the
   * old layout whole; another process migrating at the same time waits and
   * then finds the work done. The WAL is truncated after, so the old bytes
   * (zeroed in the pages by secure_delete) leave the files too.
   */
  async migrateLayout(
    version: number,
    plan: (file: LayoutFile) => {
      renames: [from: string, to: string][];
      rewrites: { position: bigint; data: unknown }[];
      forgetDeleted: string[];
    },
  ): Promise<boolean> {
    const migrate = this.db.transaction((): boolean => {
      if (this.layoutVersion() >= version) return false;
      const file = this.layoutFile();
      const { renames, rewrites, forgetDeleted } = plan(file);
      const rename = this.db.prepare('UPDATE streams SET name = ? WHERE name = ?');
      for (const [from, to] of renames) rename.run(to, from);
      const rewrite = this.db.prepare('UPDATE event_rows SET data = ? WHERE position = ?');
      for (const { position, data } of rewrites) rewrite.run(JSON.stringify(data), position);
      const forget = this.db.prepare('DELETE FROM deleted_streams WHERE stream = ?');
      for (const name of forgetDeleted) forget.run(name);
      this.db.pragma(`user_version = ${layoutStamp(Math.trunc(version))}`);
      return true;
    });
    const migrated = migrate.immediate();
    if (migrated) await this.truncateWal();
    return migrated;
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    for (const subscription of [...this.subscriptions]) await subscription.unsubscribe();
    this.db.close();
  }

  private appendOne({ stream, events, expectedRevision }: AppendRequest): AppendResult {
    if (this.statements.isDeleted.get(deletedName(stream), stream)) throw new StreamDeleted(stream);
    const number = this.streamNumber(stream);
    const last = number === undefined ? undefined : (this.statements.last.get(number) as StoredRef | undefined);
    const current = last?.revision ?? NO_STREAM;
    const stored = events.map((event) =>
      number === undefined ? undefined : (this.statements.byId.get(number, storedId(event.id)) as StoredRef | undefined),
    );
    const plan = planAppend(stream, events, expectedRevision, current, stored);
    if (plan.kind === 'duplicate') return { nextExpectedRevision: plan.revision, position: plan.position, duplicate: true };
    if (plan.events.length === 0) return { nextExpectedRevision: current, position: last?.position ?? -1n, duplicate: false };
    return this.write(
      number ?? (this.statements.newStream.run(stream).lastInsertRowid as bigint),
      plan.events,
      current,
      last?.position ?? -1n,
    );
  }

  private streamNumber(stream: string): bigint | undefined {
    return this.statements.streamNumber.get(stream) as bigint | undefined;
  }

  private write(stream: bigint, events: EventData[], current: bigint, lastPosition: bigint): AppendResult {
    const created = BigInt(Date.now());
    let revision = current;
    let position = lastPosition;
    for (const event of events) {
      revision += 1n;
      const data = JSON.stringify(event.data ?? null);
      const metadata = JSON.stringify(event.metadata ?? {});
      position = this.statements.insert.run(stream, revision, storedId(event.id), event.type, data, metadata, created)
        .lastInsertRowid as bigint;
    }
    return { nextExpectedRevision: revision, position, duplicate: false };
  }

  private head(): bigint {
    return (this.statements.head.get() as bigint | undefined) ?? -1n;
  }

  private scan(query: AllQuery, after: bigint): ScanResult<RecordedEvent> {
    if (!this.db.open) return { events: [], scannedTo: after, closed: true };
    if (this.head() <= after) return { events: [], scannedTo: after, closed: false };
    const { rows, head } = this.scanTransaction(query, after, PAGE_SIZE);
    // A full page may stop short of the head; otherwise the whole log up to the
    // head has been scanned, including events the filter dropped.
    const scannedTo = rows.length === PAGE_SIZE ? rows[rows.length - 1].position : head;
    return { events: rows.map(toRecorded), scannedTo, closed: false };
  }

  /** Filters are pushed into SQL; statements are cached per filter shape. An empty list means no constraint. */
  private allQuery(direction: Direction, filter: EventFilter = {}): AllQuery {
    const prefixes = filter.streamNamePrefix ?? [];
    const types = filter.eventType ?? [];
    const key = `${direction}:${prefixes.length}:${types.length}`;
    let statement = this.allStatements.get(key);
    if (!statement) {
      const where = [direction === 'forwards' ? 'e.position > ?' : 'e.position < ?'];
      if (prefixes.length > 0) where.push(`(${prefixes.map(() => 'substr(s.name, 1, length(?)) = ?').join(' OR ')})`);
      if (types.length > 0) where.push(`e.type IN (${types.map(() => '?').join(', ')})`);
      const order = direction === 'forwards' ? 'ASC' : 'DESC';
      statement = this.db
        .prepare(`SELECT ${allColumns} FROM ${allFrom} WHERE ${where.join(' AND ')} ORDER BY e.position ${order} LIMIT ?`)
        .safeIntegers(true);
      this.allStatements.set(key, statement);
    }
    return { statement, params: [...prefixes.flatMap((p) => [p, p]), ...types] };
  }

  private wakeSubscriptions(): void {
    for (const subscription of this.subscriptions) subscription.wake();
  }

  /**
   * Deleted rows are zeroed in the database pages (secure_delete), but the WAL
   * still holds earlier frames with the original bytes until it is checkpointed
   * and truncated. A reader in another process can block the truncation; retry
   * briefly, then leave it to the next checkpoint.
   */
  private async truncateWal(): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      if (!result || result.busy === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

function readPage({ statement, params }: AllQuery, after: bigint, limit: number): EventRow[] {
  return statement.all(after, ...params, limit) as EventRow[];
}

function toRecorded(row: EventRow): RecordedEvent {
  return {
    streamId: row.stream,
    id: readId(row.id),
    type: row.type,
    revision: row.revision,
    position: row.position,
    data: JSON.parse(row.data),
    metadata: JSON.parse(row.metadata),
    created: new Date(Number(row.created)),
  };
}

/**
 * A hard-deleted stream is remembered by a hash of its name. Event streams
 * are named by subject pseudonyms, whose mapping erasure destroys; names from
 * before pseudonyms (`events-{tenant}-{subject}`) carried the subject's id,
 * and a plain hash of such a name can still be matched against a guess.
 */
function deletedName(stream: string): string {
  return `sha256:${createHash('sha256').update(stream, 'utf8').digest('hex')}`;
}
