import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { FormatTooNew, IndexPartitionCorrupt, RECALLABLE_STATUSES } from '@elma/domain';
import { folderFixture, indexFolder, memoryIndexContract } from '../contract';
import { embed, indexed } from '../fixtures';
import { IndexThreadExited, ThreadedMemoryIndex } from './threaded-memory-index';

const DIMENSIONS = 384;

// The same contract as the index in this thread (sqlite-memory-index.int.spec.ts), through the thread.
memoryIndexContract(
  'ThreadedMemoryIndex',
  folderFixture((dir, options) => ThreadedMemoryIndex.open({ dir, dimensions: DIMENSIONS, ...options })),
);

const T = 'tenant-a';
const filter = { statuses: RECALLABLE_STATUSES, maxSensitivity: 'restricted' as const, now: '2025-01-01T00:00:00.000Z' };
const memories = (n: number) =>
  Array.from({ length: n }, (_, i) => indexed({ id: `m-${i}`, tenant: T, text: `parcel ${i} left the depot on day ${i % 30}` }));

describe('ThreadedMemoryIndex, the thread itself', () => {
  const dirs: string[] = [];
  const opened: ThreadedMemoryIndex[] = [];
  const open = async (dir: string) => {
    const index = await ThreadedMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    opened.push(index);
    return index;
  };
  const folder = () => {
    const dir = indexFolder();
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    for (const index of opened.splice(0)) await index.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to open a folder of a newer format with the same error class as the index in this thread', async () => {
    const dir = folder();
    await (await open(dir)).close();
    const meta = new Database(join(dir, 'meta.db'));
    meta.pragma('user_version = 999');
    meta.close();
    const failure = await ThreadedMemoryIndex.open({ dir, dimensions: DIMENSIONS }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(FormatTooNew);
    expect(failure).toMatchObject({ code: 'FORMAT.TOO_NEW', details: { found: 999, where: 'index/meta.db' } });
  });

  it('fails calls on a damaged partition with IndexPartitionCorrupt, which callers tell apart by class', async () => {
    const dir = folder();
    const index = await open(dir);
    await index.upsert(T, memories(2_000));
    await index.close();
    const fd = openSync(join(dir, `tenant-${T}.db`), 'r+');
    writeSync(fd, randomBytes(4096), 0, 4096, 0);
    closeSync(fd);

    const reopened = await open(dir);
    const failure = await reopened.search({ tenant: T, text: 'parcel depot', limit: 5, filter }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(IndexPartitionCorrupt);
    expect(failure).toMatchObject({ code: 'INDEX.PARTITION_CORRUPT', details: { tenant: T } });
    expect(await reopened.quarantined()).toEqual([T]);
  });

  it('fails the calls waiting when the thread ends, then starts it again and answers from the same files', async () => {
    const dir = folder();
    const exits: { exitCode: number }[] = [];
    const index = await ThreadedMemoryIndex.open({ dir, dimensions: DIMENSIONS }, { exited: (exit) => exits.push(exit) });
    opened.push(index);
    await index.upsert(T, memories(300));
    await index.save('views', 42n);

    // The thread ends while a large write waits for it (as a native fault in it would end it).
    const waiting = index.upsert(
      T,
      Array.from({ length: 5_000 }, (_, i) => indexed({ id: `late-${i}`, tenant: T, text: `late parcel ${i} for the depot` })),
    );
    await (index as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await expect(waiting).rejects.toBeInstanceOf(IndexThreadExited);
    await expect(waiting).rejects.toMatchObject({ code: 'INDEX.UNAVAILABLE' });
    expect(exits).toEqual([{ exitCode: 1 }]);

    // The next calls start a new thread on the same files: nothing written before is lost, and the
    // interrupted batch is all or nothing.
    expect([300, 5_300]).toContain(await index.count(T));
    expect(await index.load('views')).toBe(42n);
    const hits = await index.search({ tenant: T, text: 'parcel 7 depot', limit: 3, filter });
    expect(hits.map((hit) => hit.record.id)).toContain('m-7');
    // A close is not an exit to report.
    await index.close();
    expect(exits).toHaveLength(1);
  });

  it('reads a tenant larger than one page through records() and lineage(), and stops early without leaking the cursor', async () => {
    const dir = folder();
    const index = await open(dir);
    await index.upsert(T, memories(1_234));
    const ids: string[] = [];
    for await (const record of index.records(T)) ids.push(record.id);
    expect(ids).toHaveLength(1_234);
    expect(new Set(ids).size).toBe(1_234);
    let lineage = 0;
    for await (const entry of index.lineage(T)) {
      expect(entry.id).toMatch(/^m-/);
      if (++lineage === 10) break;
    }
    expect(lineage).toBe(10);
    expect(await index.count(T)).toBe(1_234);
  });

  it('gives the byte forms of a vector without a call to the thread, equal to the index in this thread', async () => {
    const index = await open(folder());
    const { SqliteMemoryIndex } = await import('../sqlite/sqlite-memory-index');
    const here = await SqliteMemoryIndex.open({ dir: folder(), dimensions: DIMENSIONS });
    const vector = embed('a vector to look for');
    expect(index.storedVectorForms(vector)).toEqual(here.storedVectorForms(vector));
    await here.close();
  });
});
