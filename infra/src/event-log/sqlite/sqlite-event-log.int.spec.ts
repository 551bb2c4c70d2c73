import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FORMAT_VERSIONS, type EventData, type SubscriptionItem } from '@elma/domain';
import { eventLogContract } from '../contract';
import Database from 'better-sqlite3';
import { SqliteEventLog } from './sqlite-event-log';
import { createLegacyEventTables } from './testing/legacy-layout';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'elma-event-log-'));
}

eventLogContract('sqlite', async () => {
  const dir = tempDir();
  const log = SqliteEventLog.open(join(dir, 'events.db'));
  return {
    log,
    async cleanup() {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

function event(data: unknown): EventData {
  return { id: randomUUID(), type: 'Noted', data };
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

function containsBytes(path: string, marker: string): boolean {
  return existsSync(path) && readFileSync(path).includes(Buffer.from(marker, 'utf8'));
}

describe('sqlite event log on disk', () => {
  let dir: string;
  let path: string;
  let log: SqliteEventLog;

  beforeEach(() => {
    dir = tempDir();
    path = join(dir, 'events.db');
    log = SqliteEventLog.open(path);
  });

  afterEach(async () => {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('after a hard delete the deleted content is gone from the database file and its WAL', async () => {
    const marker = `secret-${randomUUID()}`;
    const big = `${marker} ${'x'.repeat(10_000)} ${marker}`; // spills into overflow pages too
    await log.append('memory-t1-a', [event({ text: marker }), event({ text: big })], { expectedRevision: 'no_stream' });
    await log.append('memory-t1-b', [event({ text: 'kept' })], { expectedRevision: 'no_stream' });
    await log.append('memory-t1-a', [event({ note: marker })], { expectedRevision: 1n });
    expect(containsBytes(path, marker) || containsBytes(`${path}-wal`, marker)).toBe(true);

    await log.deleteStream('memory-t1-a');

    expect(containsBytes(path, marker)).toBe(false);
    expect(containsBytes(`${path}-wal`, marker)).toBe(false);
    expect(containsBytes(path, 'kept') || containsBytes(`${path}-wal`, 'kept')).toBe(true);
  });

  it('after a batch hard delete the content of every deleted stream is gone from the database file and its WAL', async () => {
    const markers = [`secret-${randomUUID()}`, `secret-${randomUUID()}`];
    await log.append('memory-t1-a', [event({ text: markers[0] })], { expectedRevision: 'no_stream' });
    await log.append('memory-t1-b', [event({ text: 'kept' })], { expectedRevision: 'no_stream' });
    await log.append('memory-t1-c', [event({ text: `${markers[1]} ${'x'.repeat(10_000)}` })], { expectedRevision: 'no_stream' });
    for (const marker of markers) expect(containsBytes(path, marker) || containsBytes(`${path}-wal`, marker)).toBe(true);

    await log.deleteStreams(['memory-t1-a', 'memory-t1-c']);

    for (const marker of markers) {
      expect(containsBytes(path, marker)).toBe(false);
      expect(containsBytes(`${path}-wal`, marker)).toBe(false);
    }
    expect(containsBytes(path, 'kept') || containsBytes(`${path}-wal`, 'kept')).toBe(true);
  });

  it('remembers a deleted stream without keeping its name (it carries a subject id), old files included', async () => {
    const stream = `events-t1-person-${randomUUID()}`;
    await log.append(stream, [event({ n: 1 })], { expectedRevision: 'no_stream' });
    await log.deleteStream(stream);
    await log.close();
    expect(containsBytes(path, stream)).toBe(false);

    // A file written before names were hashed lists the name itself; it still counts as deleted.
    const legacy = new Database(path);
    legacy.prepare('INSERT INTO deleted_streams (stream) VALUES (?)').run('events-t1-legacy');
    legacy.close();
    log = SqliteEventLog.open(path);
    for (const name of [stream, 'events-t1-legacy']) {
      await expect(log.append(name, [event({ n: 2 })], { expectedRevision: 'any' })).rejects.toMatchObject({
        code: 'EVENT_LOG.STREAM_DELETED',
      });
    }
  });

  it('events survive closing and reopening the file', async () => {
    await log.append('memory-t1-a', [event({ n: 1 }), event({ n: 2 })], { expectedRevision: 'no_stream' });
    await log.close();

    log = SqliteEventLog.open(path);
    const result = await log.append('memory-t1-a', [event({ n: 3 })], { expectedRevision: 1n });

    expect(result.nextExpectedRevision).toBe(2n);
  });

  it('an event id repeated within one append is rejected and nothing is written', async () => {
    const twice = event({});

    const attempt = log.append('memory-t1-a', [twice, event({}), twice], { expectedRevision: 'any' });

    await expect(attempt).rejects.toMatchObject({ code: 'EVENT_LOG.DUPLICATE_EVENT_ID' });
    expect(await log.headPosition()).toBe(-1n);
  });

  it('keeps each stream name once, in a numbered streams table, and UUID event ids in 16 bytes; other ids read back as written', async () => {
    const ids = [randomUUID(), 'not-a-uuid:1', randomUUID().toUpperCase()];
    await log.append(
      'memory-t1-a',
      ids.map((id) => ({ id, type: 'Noted', data: {} })),
      { expectedRevision: 'no_stream' },
    );
    await log.append('memory-t1-b', [event({})], { expectedRevision: 'no_stream' });

    const raw = new Database(path, { readonly: true });
    try {
      expect(raw.prepare('SELECT id, name FROM streams ORDER BY id').all()).toEqual([
        { id: 1, name: 'memory-t1-a' },
        { id: 2, name: 'memory-t1-b' },
      ]);
      const stored = raw.prepare('SELECT stream, typeof(id) AS kind, length(id) AS bytes FROM event_rows ORDER BY position').all();
      expect(stored).toEqual([
        { stream: 1, kind: 'blob', bytes: 16 },
        { stream: 1, kind: 'text', bytes: ids[1].length },
        { stream: 1, kind: 'text', bytes: 36 },
        { stream: 2, kind: 'blob', bytes: 16 },
      ]);
      // The `events` view shows the file as the adapter reads it.
      expect(raw.prepare("SELECT id FROM events WHERE stream = 'memory-t1-a' ORDER BY revision").pluck().all()).toEqual(ids);
    } finally {
      raw.close();
    }
    expect((await collect(log.readStream('memory-t1-a'))).map((e) => e.id)).toEqual(ids);
    // An id is found again in the form it was written: a retried append is a duplicate, not a second write.
    const retried = await log.append(
      'memory-t1-a',
      ids.map((id) => ({ id, type: 'Noted', data: {} })),
      { expectedRevision: 'no_stream' },
    );
    expect(retried.duplicate).toBe(true);
  });

  it('deleting the newest stream frees its number: a later stream may take it, and the deleted name reads as empty', async () => {
    await log.append('memory-t1-a', [event({ n: 1 })], { expectedRevision: 'no_stream' });
    await log.append('memory-t1-b', [event({ n: 2 })], { expectedRevision: 'no_stream' });
    await log.deleteStream('memory-t1-b');
    await log.append('memory-t1-c', [event({ n: 3 })], { expectedRevision: 'no_stream' });

    expect(await collect(log.readStream('memory-t1-b'))).toEqual([]);
    expect((await collect(log.readStream('memory-t1-c'))).map((e) => e.data)).toEqual([{ n: 3 }]);
    expect((await collect(log.readAll())).map((e) => [e.streamId, e.position])).toEqual([
      ['memory-t1-a', 1n],
      ['memory-t1-c', 3n],
    ]);
  });

  describe('a file from before the streams table', () => {
    /** Writes the old layout by hand: one `events` table keyed by stream names, ids as text. */
    function legacyFile(userVersion: number) {
      const raw = new Database(path);
      raw.pragma('journal_mode = WAL');
      const insert = createLegacyEventTables(raw);
      const written = [
        ['memory-t1-b', 0, randomUUID()],
        ['memory-t1-a', 0, randomUUID()],
        ['memory-t1-b', 1, 'legacy-id-1'],
        ['memory-t1-gone', 0, randomUUID()],
      ] as const;
      written.forEach(([stream, revision, id], i) =>
        insert.run(stream, revision, id, 'Noted', JSON.stringify({ i }), '{}', 1_700_000_000_000 + i),
      );
      // The newest stream was hard-deleted: the position counter is past the last event.
      raw.prepare("DELETE FROM events WHERE stream = 'memory-t1-gone'").run();
      raw.pragma(`user_version = ${userVersion}`);
      raw.close();
      return written.slice(0, 3);
    }

    it('is converted on open: positions, revisions, ids, data and the position counter are kept, and the old table is gone', async () => {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
      dir = tempDir();
      path = join(dir, 'events.db');
      const written = legacyFile(1);

      log = SqliteEventLog.open(path);

      expect((await collect(log.readAll())).map((e) => [e.position, e.streamId, e.revision, e.id, e.data, e.created.getTime()])).toEqual(
        written.map(([stream, revision, id], i) => [BigInt(i + 1), stream, BigInt(revision), id, { i }, 1_700_000_000_000 + i]),
      );
      expect(await log.headPosition()).toBe(4n);
      expect((await log.append('memory-t1-a', [event({ n: 'next' })], { expectedRevision: 0n })).position).toBe(5n);
      expect((await collect(log.readStream('memory-t1-b'))).map((e) => e.id)).toEqual([written[0][2], 'legacy-id-1']);
      expect(log.layoutVersion()).toBe(FORMAT_VERSIONS.eventLog);
      const raw = new Database(path, { readonly: true });
      try {
        expect(raw.prepare("SELECT type FROM sqlite_master WHERE name = 'events'").pluck().get()).toBe('view');
        expect(raw.prepare('SELECT name FROM streams ORDER BY id').pluck().all()).toEqual(['memory-t1-b', 'memory-t1-a']);
      } finally {
        raw.close();
      }
    });

    it('from before pseudonyms keeps its version until the pseudonym migration, which then writes the current one', async () => {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
      dir = tempDir();
      path = join(dir, 'events.db');
      legacyFile(0);

      log = SqliteEventLog.open(path);
      expect(log.layoutVersion()).toBe(0);
      expect(await log.migrateLayout(1, () => ({ renames: [['memory-t1-a', 'memory-t1-z']], rewrites: [], forgetDeleted: [] }))).toBe(true);

      expect(log.layoutVersion()).toBe(FORMAT_VERSIONS.eventLog);
      expect((await collect(log.readStream('memory-t1-z'))).map((e) => e.position)).toEqual([2n]);
      expect(await collect(log.readStream('memory-t1-a'))).toEqual([]);
    });
  });

  it('a file of format 2 (extracted first versions appended) is stamped 3 on open, its events as they were', async () => {
    await log.append('memory-t1-a', [event({ n: 1 })], { expectedRevision: 'no_stream' });
    await log.close();
    const raw = new Database(path);
    raw.pragma('user_version = 2');
    raw.close();

    log = SqliteEventLog.open(path);

    expect(log.layoutVersion()).toBe(3);
    expect((await collect(log.readStream('memory-t1-a'))).map((e) => e.data)).toEqual([{ n: 1 }]);
  });

  it('a subscriber sees an append made through another connection within 250 ms', async () => {
    const other = SqliteEventLog.open(path);
    const subscription = log.subscribeToAll({ fromPosition: 'end' });
    const iterator = subscription[Symbol.asyncIterator]();
    const next = async (): Promise<SubscriptionItem> => (await iterator.next()).value as SubscriptionItem;
    try {
      const first = next();
      await new Promise((resolve) => setTimeout(resolve, 60));
      const started = performance.now();
      await other.append('memory-t1-a', [event({ n: 1 })], { expectedRevision: 'any' });

      const item = await first;
      const elapsed = performance.now() - started;

      expect(item.kind).toBe('event');
      expect(elapsed).toBeLessThan(250);
    } finally {
      await subscription.unsubscribe();
      await other.close();
    }
  });
});
