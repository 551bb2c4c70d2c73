import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventData, SubscriptionItem } from '@elma/domain';
import { eventLogContract } from '../contract';
import Database from 'better-sqlite3';
import { SqliteEventLog } from './sqlite-event-log';

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
