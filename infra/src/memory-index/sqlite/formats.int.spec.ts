import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { FORMAT_VERSIONS, type FormatVersions } from '@elma/domain';
import { embed, indexed, searchIds } from '../fixtures';
import { scratchIndex } from './scratch.testing';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { graphVectorBytes } from './vector-graph';
import { cosine, toBlob } from './vectors';

const T = 'acme';
const DIMENSIONS = 384;
const MODEL = 'hashing-384';

const memories = () => [
  indexed({ id: 'invoice', tenant: T, text: 'The customer asked about the pallet invoice' }),
  indexed({ id: 'zh-invoice', tenant: T, text: '客户询问了托盘发票' }),
];

function partition(dir: string, use: (db: Database.Database) => void): void {
  const db = new Database(join(dir, `tenant-${T}.db`), { fileMustExist: true });
  try {
    use(db);
  } finally {
    db.close();
  }
}

describe('the embedded index and its format versions', () => {
  const scratch = scratchIndex('formats');
  const open = (formats: FormatVersions = FORMAT_VERSIONS) =>
    SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS, model: MODEL, formats });

  it('stamps a new partition with indexRows, its vectors with the vectors format, and meta.db with indexMeta', async () => {
    scratch.index = await open();
    await scratch.index.upsert(T, memories());
    await scratch.index.close();
    scratch.index = undefined;

    partition(scratch.dir, (db) => {
      expect(db.pragma('user_version', { simple: true })).toBe(FORMAT_VERSIONS.indexRows);
      expect(db.prepare(`SELECT value FROM partition_state WHERE key = 'vectors_format'`).pluck().get()).toBe(FORMAT_VERSIONS.vectors);
    });
    const meta = new Database(join(scratch.dir, 'meta.db'), { fileMustExist: true });
    expect(meta.pragma('user_version', { simple: true })).toBe(FORMAT_VERSIONS.indexMeta);
    meta.close();
  });

  it('refuses a partition of a newer rows or vectors format by name (FORMAT.TOO_NEW), leaving its rows as they were', async () => {
    scratch.index = await open();
    await scratch.index.upsert(T, memories());
    await scratch.index.close();

    partition(scratch.dir, (db) => db.pragma(`user_version = ${FORMAT_VERSIONS.indexRows + 1}`));
    scratch.index = await open();
    await expect(scratch.index.count(T)).rejects.toMatchObject({
      code: 'FORMAT.TOO_NEW',
      message: `index partition: indexRows format version ${FORMAT_VERSIONS.indexRows + 1} is newer than this build reads (${FORMAT_VERSIONS.indexRows}); run a newer ELMA`,
    });
    await scratch.index.close();

    partition(scratch.dir, (db) => {
      db.pragma(`user_version = ${FORMAT_VERSIONS.indexRows}`);
      db.prepare(`UPDATE partition_state SET value = ? WHERE key = 'vectors_format'`).run(FORMAT_VERSIONS.vectors + 1);
    });
    scratch.index = await open();
    await expect(scratch.index.count(T)).rejects.toMatchObject({ code: 'FORMAT.TOO_NEW', details: { format: 'vectors' } });
    await scratch.index.close();
    scratch.index = undefined;
    partition(scratch.dir, (db) => expect(db.prepare('SELECT count(*) FROM memories').pluck().get()).toBe(2));
  });

  it('migrates an older vectors format in place: rows wait for new vectors, BM25 answers meanwhile, the dense route once they are made', async () => {
    scratch.index = await open();
    await scratch.index.upsert(T, memories());
    await scratch.index.close();
    const next = { ...FORMAT_VERSIONS, vectors: FORMAT_VERSIONS.vectors + 1 };

    scratch.index = await open(next);
    const pending = await scratch.index.pendingEmbeddings(T, 10);
    expect(pending.map((p) => p.id).sort()).toEqual(['invoice', 'zh-invoice']);
    expect(await searchIds(scratch.index, T, '托盘发票')).toContain('zh-invoice');
    // No vector of the old format answers the dense route.
    expect(await searchIds(scratch.index, T, '', embed('The customer asked about the pallet invoice'))).toEqual([]);

    await scratch.index.setVectors(
      T,
      pending.map((p) => ({ id: p.id, version: p.version, vector: embed(p.text), model: MODEL })),
    );
    expect((await searchIds(scratch.index, T, '', embed('The customer asked about the pallet invoice')))[0]).toBe('invoice');
    await scratch.index.close();
    scratch.index = undefined;
    partition(scratch.dir, (db) =>
      expect(db.prepare(`SELECT value FROM partition_state WHERE key = 'vectors_format'`).pluck().get()).toBe(next.vectors),
    );
  });

  it('quantises the float32 vectors of a format 1 partition in place on open: none waits for a new one, the dense route answers', async () => {
    scratch.index = await open();
    await scratch.index.upsert(T, memories());
    await scratch.index.close();
    // The layout of format 1: each row's vector as float32, no vectors marker.
    partition(scratch.dir, (db) => {
      const update = db.prepare('UPDATE memories SET vector = ? WHERE rowid = ?');
      for (const row of db.prepare(`SELECT rowid, json_extract(record, '$.content.text') AS text FROM memories`).all() as {
        rowid: number;
        text: string;
      }[])
        update.run(toBlob(embed(row.text)), row.rowid);
      db.prepare(`DELETE FROM partition_state WHERE key = 'vectors_format'`).run();
    });

    scratch.index = await open();
    expect(await scratch.index.pendingEmbeddings(T, 10)).toEqual([]);
    const query = embed('The customer asked about the pallet invoice');
    expect((await searchIds(scratch.index, T, '', query))[0]).toBe('invoice');
    const kept = (await scratch.index.get(T, 'invoice'))!.vector!;
    expect(cosine(kept, query)).toBeGreaterThan(0.999);
    await scratch.index.close();
    scratch.index = undefined;
    partition(scratch.dir, (db) => {
      expect(db.prepare(`SELECT value FROM partition_state WHERE key = 'vectors_format'`).pluck().get()).toBe(FORMAT_VERSIONS.vectors);
      // A scale and one byte per component, a quarter of float32's bytes.
      expect(db.prepare('SELECT DISTINCT length(vector) FROM memories').pluck().all()).toEqual([4 + DIMENSIONS]);
    });
  });

  // A graph file of f32 from before the scalar type was recorded (no record: read as f32), and one of f16 (the default before i8).
  it.each([
    { scalar: 'f32', bytes: 4, recorded: false },
    { scalar: 'f16', bytes: 2, recorded: true },
  ] as const)(
    'rebuilds a graph file of $scalar vectors (recorded: $recorded) as i8 on open, one byte a component',
    async ({ scalar, bytes, recorded }) => {
      scratch.index = await SqliteMemoryIndex.open({
        dir: scratch.dir,
        dimensions: DIMENSIONS,
        model: MODEL,
        graph: { quantization: scalar },
      });
      await scratch.index.upsert(T, memories());
      await scratch.index.close();
      if (!recorded) partition(scratch.dir, (db) => db.prepare(`DELETE FROM partition_state WHERE key = 'graph_scalar_bytes'`).run());
      const graphFile = join(scratch.dir, `tenant-${T}.usearch`);
      const before = statSync(graphFile).size;

      scratch.index = await open();
      const vector = (await scratch.index.get(T, 'invoice'))!.vector!;
      expect((await searchIds(scratch.index, T, '', vector))[0]).toBe('invoice');
      await scratch.index.close();
      scratch.index = undefined;
      const file = readFileSync(graphFile);
      expect(file.includes(graphVectorBytes(vector, 'i8'))).toBe(true);
      expect(file.includes(graphVectorBytes(vector, scalar))).toBe(false);
      expect(before - file.byteLength).toBe(memories().length * (bytes - 1) * DIMENSIONS);
      partition(scratch.dir, (db) =>
        expect(db.prepare(`SELECT value FROM partition_state WHERE key = 'graph_scalar_bytes'`).pluck().get()).toBe(1),
      );
    },
  );

  it('writes rows of format 2 without what their columns hold, and reads them back whole, by id and from a search', async () => {
    const turn = indexed({
      id: 'turn',
      tenant: T,
      kind: 'episodic',
      subject: 'alice',
      session: 'chat-1',
      text: 'The pallet invoice was paid',
    });
    const used = indexed({
      id: 'used',
      tenant: T,
      text: 'A pallet that was recalled before',
      usage: { retrieved: 3, adopted: 1, lastUsedAt: '2024-02-01T00:00:00.000Z' },
    });
    scratch.index = await open();
    await scratch.index.upsert(T, [turn, used]);
    const stored = new Map<string, Record<string, unknown>>();
    partition(scratch.dir, (db) => {
      for (const row of db.prepare('SELECT id, record FROM memories').all() as { id: string; record: string }[])
        stored.set(row.id, JSON.parse(row.record) as Record<string, unknown>);
    });
    for (const field of ['tenant', 'id', 'version', 'kind', 'status', 'subject', 'session', 'usage'])
      expect(Object.keys(stored.get('turn')!)).not.toContain(field);
    // Counts that are not all zero stay in the JSON (the usage table adds to them).
    expect(stored.get('used')!.usage).toEqual(used.record.usage);

    expect((await scratch.index.get(T, 'turn'))!.record).toEqual(turn.record);
    expect((await scratch.index.get(T, 'used'))!.record).toEqual(used.record);
    const hits = await scratch.index.search({
      tenant: T,
      text: 'pallet',
      limit: 10,
      filter: { statuses: ['active'], maxSensitivity: 'restricted', now: '2025-01-01T00:00:00.000Z' },
    });
    expect(new Map(hits.map((h) => [h.record.id, h.record]))).toEqual(
      new Map([
        ['turn', turn.record],
        ['used', used.record],
      ]),
    );
  });

  it('keeps writing whole records into a partition of format 1, which the build before reads, until it is rebuilt', async () => {
    scratch.index = await open({ ...FORMAT_VERSIONS, indexRows: 1 });
    await scratch.index.upsert(T, memories().slice(0, 1));
    await scratch.index.close();

    scratch.index = await open();
    await scratch.index.upsert(T, memories().slice(1));
    partition(scratch.dir, (db) => {
      expect(db.pragma('user_version', { simple: true })).toBe(1);
      for (const { record } of db.prepare('SELECT record FROM memories').all() as { record: string }[])
        expect(JSON.parse(record)).toMatchObject({ tenant: T, status: 'active' });
    });
    expect((await scratch.index.get(T, 'zh-invoice'))!.record).toEqual(memories()[1].record);
  });

  it('takes a partition from before the vectors marker as format 1: the next vectors format re-embeds it too', async () => {
    scratch.index = await open();
    await scratch.index.upsert(T, memories());
    await scratch.index.close();
    partition(scratch.dir, (db) => db.prepare(`DELETE FROM partition_state WHERE key = 'vectors_format'`).run());

    scratch.index = await open({ ...FORMAT_VERSIONS, vectors: FORMAT_VERSIONS.vectors + 1 });
    expect((await scratch.index.pendingEmbeddings(T, 10)).map((p) => p.id).sort()).toEqual(['invoice', 'zh-invoice']);
  });
});
