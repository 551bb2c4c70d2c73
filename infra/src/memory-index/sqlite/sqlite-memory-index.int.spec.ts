import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { RECALLABLE_STATUSES, type ReadClause } from '@elma/domain';
import { folderFixture, indexFolder, memoryIndexContract } from '../contract';
import { embed, indexed, searchIds } from '../fixtures';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { quantise } from './vectors';

const DIMENSIONS = 384;

memoryIndexContract(
  'SqliteMemoryIndex',
  folderFixture((dir, options) => SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS, ...options })),
);

const T = 'tenant-a';
const search = (index: SqliteMemoryIndex, text: string, vector?: Float32Array): Promise<string[]> => searchIds(index, T, text, vector);

/** Every file in the folder that contains `needle`, by name. */
function filesContaining(dir: string, needle: Buffer): string[] {
  return readdirSync(dir).filter((file) => readFileSync(join(dir, file)).includes(needle));
}

describe('SqliteMemoryIndex on disk', () => {
  let dir: string;
  let index: SqliteMemoryIndex | undefined;
  afterEach(async () => {
    await index?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves no byte of a purged record in any file, and still searches after reopening', async () => {
    dir = indexFolder();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    const marker = 'ZQXMARKER9731';
    const victim = indexed({ id: 'victim', tenant: T, text: `Patient ${marker} was diagnosed with 糖尿病 in March.` });
    const neighbours = Array.from({ length: 300 }, (_, i) =>
      indexed({ id: `n-${i}`, tenant: T, text: `routine note ${i} about the patient portal and 预约 ${i % 7}` }),
    );
    await index.upsert(T, [victim, ...neighbours]);
    // Flush everything to disk so the victim's bytes are in the db, the WAL and the graph file before the purge.
    await index.close();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    expect(await search(index, marker)).toEqual(['victim']);

    // The vector as the index holds it: f16 in the graph, quantised in the row. These are also what the erasure
    // byte scan looks for: each form is in a file before the purge, none after it.
    const [vectorBytes, ...forms] = index.storedVectorForms((await index.get(T, 'victim'))!.vector!);
    const rowBytes = quantise(victim.vector!);
    for (const form of forms) expect(filesContaining(dir, form).length).toBeGreaterThan(0);
    const markerBytes = [Buffer.from(marker), Buffer.from(marker.toLowerCase())];
    expect(filesContaining(dir, vectorBytes)).toContain(`tenant-${T}.usearch`);
    expect(filesContaining(dir, rowBytes)).toContain(`tenant-${T}.db`);
    expect(filesContaining(dir, markerBytes[1]).length).toBeGreaterThan(0);

    await index.purge(T, ['victim']);

    for (const needle of [...markerBytes, vectorBytes, rowBytes, ...forms]) expect(filesContaining(dir, needle)).toEqual([]);
    // A slice of the vector too: a partial copy (one page boundary apart) must not survive either.
    expect(filesContaining(dir, vectorBytes.subarray(0, 64))).toEqual([]);

    await index.close();
    for (const needle of [...markerBytes, vectorBytes, rowBytes]) expect(filesContaining(dir, needle)).toEqual([]);
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    expect(await index.count(T)).toBe(300);
    expect(await search(index, marker, victim.vector)).not.toContain('victim');
    expect((await search(index, '', embed('routine note 42 about the patient portal and 预约 0')))[0]).toBe('n-42');
    expect((await search(index, 'note 17'))[0]).toBe('n-17');
  });

  it('upgrades a partition written before the policy columns existed, keeping its filters right', async () => {
    dir = indexFolder();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    await index.upsert(T, [
      indexed({ id: 'support-note', tenant: T, text: 'upgrade note about invoices', policy: { purposes: ['support'], project: 'apollo' } }),
      indexed({ id: 'hr-note', tenant: T, text: 'upgrade note about invoices too', policy: { purposes: ['hr'] } }),
    ]);
    await index.close();
    // Given a file as the first release wrote it: no project, retention class or purpose columns.
    const old = new Database(join(dir, `tenant-${T}.db`));
    for (const column of ['project', 'retention_class', 'purpose_set']) old.exec(`ALTER TABLE memories DROP COLUMN ${column}`);
    old.close();

    // When it is opened again, then the backfilled columns answer purpose and project clauses as before.
    const upgraded = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    index = upgraded;
    const byClause = async (clause: Partial<ReadClause>) =>
      (
        await upgraded.search({
          tenant: T,
          text: 'upgrade note invoices',
          limit: 10,
          filter: {
            statuses: RECALLABLE_STATUSES,
            maxSensitivity: 'restricted',
            now: '2025-01-01T00:00:00.000Z',
            clauses: [{ ruleId: 'r', maxSensitivity: 'restricted', ...clause }],
          },
        })
      ).map((h) => h.record.id);
    expect(await byClause({ purpose: 'support' })).toEqual(['support-note']);
    expect(await byClause({ purpose: 'hr' })).toEqual(['hr-note']);
    expect(await byClause({ project: 'apollo' })).toEqual(['support-note']);
    expect((await byClause({ retentionClasses: ['standard'] })).sort()).toEqual(['hr-note', 'support-note']);
  });

  it('rebuilds a graph file that is missing or older than the rows', async () => {
    dir = indexFolder();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS, persistEveryRows: 1_000_000 });
    await index.upsert(T, [indexed({ id: 'a', tenant: T, text: 'first memory about invoices' })]);
    await index.close();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS, persistEveryRows: 1_000_000 });
    await index.upsert(T, [indexed({ id: 'b', tenant: T, text: 'second memory about contracts' })]);
    // Simulate a crash: the graph file on disk predates `b`.
    const crashed = index;
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    expect((await search(index, '', embed('second memory about contracts')))[0]).toBe('b');
    await index.close();

    rmSync(join(dir, `tenant-${T}.usearch`));
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    expect((await search(index, '', embed('first memory about invoices')))[0]).toBe('a');
    await crashed.close().catch(() => undefined);
  });

  it('finds the nearest allowed records even when a filter rejects most graph candidates', async () => {
    dir = indexFolder();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    const many = Array.from({ length: 2_000 }, (_, i) =>
      indexed({ id: `m-${i}`, tenant: T, text: `shipment delay report ${i}`, status: i % 250 === 0 ? 'active' : 'superseded' }),
    );
    await index.upsert(T, many);
    const hits = await index.search({
      tenant: T,
      text: '',
      vector: embed('shipment delay report 500'),
      limit: 3,
      filter: { statuses: ['active'], maxSensitivity: 'restricted', now: '2025-01-01T00:00:00.000Z' },
    });
    expect(hits.map((h) => h.record.id)).toEqual(expect.arrayContaining(['m-500']));
    expect(hits[0].record.id).toBe('m-500');
    expect(hits.every((h) => h.record.status === 'active')).toBe(true);
  });

  it('rejects records of another tenant, wrong-sized vectors and unsafe tenant ids', async () => {
    dir = indexFolder();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    await expect(index.upsert(T, [indexed({ id: 'x', tenant: 'tenant-b' })])).rejects.toThrow(/another tenant/);
    await expect(index.upsert(T, [{ ...indexed({ id: 'x', tenant: T }), vector: new Float32Array(3) }])).rejects.toThrow(/384/);
    await expect(index.count('../etc')).rejects.toThrow(/tenant id/);
    expect(await index.count('unknown-tenant')).toBe(0);
    expect(readdirSync(dir).filter((f) => f.startsWith('tenant-unknown'))).toEqual([]);
  });

  it('ranks by the rare word of a query whose other words are in most memories, and still answers all-common queries', async () => {
    dir = indexFolder();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    const common = Array.from({ length: 1_500 }, (_, i) =>
      indexed({ id: `c-${i}`, tenant: T, text: `weekly status update meeting notes ${i}` }),
    );
    await index.upsert(T, [...common, indexed({ id: 'rare', tenant: T, text: 'weekly status update: the Zanzibar office closes' })]);

    expect((await search(index, 'weekly status zanzibar'))[0]).toBe('rare');
    const allCommon = await search(index, 'weekly status update meeting');
    expect(allCommon).toHaveLength(10);
  });

  it('passes over any number of hidden turns to the nearest admitted neighbour', async () => {
    dir = indexFolder();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    const at = (minute: number) => new Date(Date.UTC(2024, 0, 1, 10, minute)).toISOString();
    const turn = (id: string, minute: number, sensitivity: 'internal' | 'restricted') =>
      indexed({ id, tenant: T, kind: 'episodic', subject: 'alice', session: 's', validFrom: at(minute), policy: { sensitivity } });
    // Ten hidden turns between the two admitted ones: more than the nearest turns checked in memory.
    const hidden = Array.from({ length: 10 }, (_, i) => turn(`hidden-${i}`, i + 1, 'restricted'));
    await index.upsert(T, [turn('first', 0, 'internal'), ...hidden, turn('last', 11, 'internal')]);
    const filter = { statuses: RECALLABLE_STATUSES, maxSensitivity: 'internal' as const, now: '2025-01-01T00:00:00.000Z' };
    const found = await index.neighbours(T, ['first', 'last'], filter);
    expect(found.map((f) => [f.id, f.previous?.record.id, f.next?.record.id])).toEqual([
      ['first', undefined, 'last'],
      ['last', 'first', undefined],
    ]);
  });

  it('lists all ids in insertion order', async () => {
    dir = indexFolder();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    await index.upsert(T, [indexed({ id: 'b', tenant: T }), indexed({ id: 'a', tenant: T })]);
    expect(await index.allIds(T)).toEqual(['b', 'a']);
  });
});
