import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { RECALLABLE_STATUSES, type HybridQuery, type IndexScope } from '@elma/domain';
import { embed, indexed } from '../fixtures';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { scratchIndex } from './scratch.testing';
import { readVarints } from './tenant-partition';

const T = 'acme';
const filter = { statuses: RECALLABLE_STATUSES, maxSensitivity: 'restricted' as const, now: '2025-01-01T00:00:00.000Z' };
const search = (index: SqliteMemoryIndex, text: string, scope?: IndexScope, vector?: Float32Array): Promise<string[]> =>
  index
    .search({ tenant: T, text, vector, limit: 10, filter: { ...filter, ...(scope ? { scope } : {}) } } satisfies HybridQuery)
    .then((hits) => hits.map((hit) => hit.record.id));
const scopeKeyRows = (dir: string) => {
  const db = new Database(join(dir, `tenant-${T}.db`), { readonly: true });
  try {
    return db.prepare('SELECT key, row FROM scope_keys ORDER BY row, key').all() as { key: string; row: number }[];
  } finally {
    db.close();
  }
};

describe('a scoped search on the embedded index (scope_keys)', () => {
  const scratch = scratchIndex('scoped-search');

  it('finds an in-scope BM25 match however many newer matches of a common word lie outside the scope', async () => {
    const index = (scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 }));
    await index.upsert(T, [indexed({ id: 'chen-invoice', tenant: T, subject: 'chen', text: 'invoice overdue for the printer' })]);
    // More than the BM25 route's budget (500) of newer rows with the same word, all of another subject.
    await index.upsert(
      T,
      Array.from({ length: 600 }, (_, i) => indexed({ id: `other-${i}`, tenant: T, subject: 'dana', text: `invoice number ${i} paid` })),
    );
    expect(await search(index, 'invoice', { subjects: ['chen'] })).toEqual(['chen-invoice']);
    expect(await search(index, 'invoice', { subjects: ['chen'] }, embed('invoice overdue for the printer'))).toEqual(['chen-invoice']);
  });

  it('scores a scoped BM25 match as FTS5 scores it unscoped', async () => {
    const index = (scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 }));
    await index.upsert(T, [
      indexed({ id: 'a', tenant: T, subject: 'chen', text: 'the invoice was sent twice, invoice 42 disputed' }),
      indexed({ id: 'b', tenant: T, subject: 'chen', text: 'a short note on the disputed printer lease' }),
      indexed({ id: 'c', tenant: T, subject: 'dana', text: 'invoice for dana' }),
      indexed({ id: 'd', tenant: T, subject: 'chen', text: '发票 已经 寄出 invoice 发票' }),
      // Many matches outside the scope: the few in it are scored one by one, not by FTS5 over the whole match.
      ...Array.from({ length: 100 }, (_, i) =>
        indexed({ id: `dana-${i}`, tenant: T, subject: 'dana', text: `invoice ${i} disputed, printer lease 发票 ${'x '.repeat(i % 7)}` }),
      ),
    ]);
    const scores = async (text: string, scope?: IndexScope) =>
      new Map(
        (await index.search({ tenant: T, text, limit: 200, filter: { ...filter, ...(scope ? { scope } : {}) } })).map((hit) => [
          hit.record.id,
          hit.bm25Score,
        ]),
      );
    for (const text of ['disputed invoice', '发票 invoice', 'printer lease']) {
      const unscoped = await scores(text);
      const scoped = await scores(text, { subjects: ['chen'] });
      expect(scoped.size).toBeGreaterThan(0);
      for (const [id, score] of scoped) expect(score).toBeCloseTo(unscoped.get(id)!, 9);
    }
  });

  it('keeps scope_keys in step with the rows: a replaced row leaves its keys to the new one, a purge leaves none', async () => {
    const index = (scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 }));
    await index.upsert(T, [
      indexed({ id: 'a', tenant: T, subject: 'chen', session: 'chat-1', text: 'first' }),
      indexed({ id: 'b', tenant: T, subject: 'dana', text: 'second' }),
    ]);
    await index.upsert(T, [indexed({ id: 'a', tenant: T, subject: 'chen', session: 'chat-1', text: 'first again' })]);
    await index.flush();
    const keys = scopeKeyRows(scratch.dir);
    expect(new Set(keys.map((k) => k.key))).toEqual(new Set(['subject:"chen"', 'session:"chat-1"', 'subject:"dana"']));
    expect(new Set(keys.map((k) => k.row)).size).toBe(2);
    expect(await search(index, 'first', { sessions: ['chat-1'] })).toEqual(['a']);

    await index.purge(T, ['a', 'b']);
    expect(scopeKeyRows(scratch.dir)).toEqual([]);
    expect(await search(index, 'first', { sessions: ['chat-1'] })).toEqual([]);
  });

  it('fills scope_keys from scope_set in a partition from before it', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 });
    await scratch.index.upsert(T, [
      indexed({ id: 'a', tenant: T, subject: 'chen', text: 'lease renewal' }),
      indexed({ id: 'b', tenant: T, subject: 'dana', text: 'lease renewal' }),
    ]);
    await scratch.index.close();
    const db = new Database(join(scratch.dir, `tenant-${T}.db`));
    db.exec('DROP TABLE scope_keys');
    db.close();

    const index = (scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 }));
    expect(await search(index, 'lease', { subjects: ['dana'] })).toEqual(['b']);
    expect(await search(index, '', { subjects: ['chen'] }, embed('lease renewal'))).toEqual(['a']);
  });
});

describe('readVarints', () => {
  it("reads SQLite's varints: one byte, several, and the nine-byte form", () => {
    expect(readVarints(Buffer.from([0x05, 0x81, 0x00, 0xff, 0x7f]))).toEqual([5, 128, 0x3fff]);
    expect(readVarints(Buffer.from([0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]))).toEqual([2 ** 57 + 1]);
    expect(readVarints(undefined)).toEqual([]);
  });
});
