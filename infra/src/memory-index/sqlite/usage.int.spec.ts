import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { indexed } from '../fixtures';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { scratchIndex } from './scratch.testing';

const T = 'acme';

describe('usage counts of the embedded index', () => {
  const scratch = scratchIndex('usage');
  /** The usage table as another connection reads it from the file: what a crash would leave. */
  const written = (id: string) => {
    const db = new Database(join(scratch.dir, `tenant-${T}.db`), { readonly: true });
    try {
      return db.prepare('SELECT retrieved, adopted FROM usage WHERE id = ?').get(id) ?? null;
    } finally {
      db.close();
    }
  };
  const usageOf = async (id: string) => (await scratch.index!.get(T, id))?.record.usage;

  it('are read at once, written together within a second, and written at close', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 });
    await scratch.index.upsert(T, [indexed({ id: 'a', tenant: T, text: 'invoice' }), indexed({ id: 'b', tenant: T, text: 'depot' })]);
    await scratch.index.recordUsage(T, ['a', 'a', 'b', 'ghost'], 'retrieved', '2026-12-01T10:00:00.000Z');
    await scratch.index.recordUsage(T, ['a'], 'adopted', '2026-12-01T11:00:00.000Z');
    expect(await usageOf('a')).toEqual({ retrieved: 1, adopted: 1, lastUsedAt: '2026-12-01T11:00:00.000Z' });
    expect(written('a')).toBeNull();

    // Within USAGE_DELAY_MS (1 s) of the first count, with no further recall to carry them.
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    expect(written('a')).toEqual({ retrieved: 1, adopted: 1 });
    expect(written('b')).toEqual({ retrieved: 1, adopted: 0 });
    expect(written('ghost')).toBeNull();

    await scratch.index.recordUsage(T, ['b'], 'retrieved', '2026-12-01T12:00:00.000Z');
    expect(await usageOf('b')).toEqual({ retrieved: 2, adopted: 0, lastUsedAt: '2026-12-01T12:00:00.000Z' });
    await scratch.index.close();
    expect(written('b')).toEqual({ retrieved: 2, adopted: 0 });
  });

  it('of a purged record are dropped, written or waiting', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 });
    await scratch.index.upsert(T, [indexed({ id: 'a', tenant: T, text: 'invoice' })]);
    await scratch.index.recordUsage(T, ['a'], 'retrieved', '2026-12-01T10:00:00.000Z');
    await scratch.index.purge(T, ['a']);
    await scratch.index.upsert(T, [indexed({ id: 'a', tenant: T, text: 'invoice again' })]);
    expect(await usageOf('a')).toEqual({ retrieved: 0, adopted: 0, lastUsedAt: null });
    await scratch.index.close();
    expect(written('a')).toBeNull();
  });
});
