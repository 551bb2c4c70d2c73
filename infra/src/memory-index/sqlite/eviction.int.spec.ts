import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { embed, indexed, searchIds } from '../fixtures';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { scratchIndex } from './scratch.testing';

const DIMENSIONS = 384;
const MiB = 1024 * 1024;
const tenants = Array.from({ length: 8 }, (_, i) => `t${i}`);
const text = (tenant: string, i: number) => `${tenant} invoice ${i} for order ${i * 7} shipped to depot ${i % 11}`;

describe('the open tenant partitions', () => {
  const scratch = scratchIndex('eviction');

  it('stay within the memory budget, and an evicted tenant reopens with the same answers', async () => {
    // Each tenant's partition holds about 5 MiB (1,500 vectors of 384 floats, links, page cache): 8 of them need ~40 MiB.
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS, memoryBudgetBytes: 16 * MiB });
    const answers = new Map<string, string[]>();
    for (const tenant of tenants) {
      await scratch.index.upsert(
        tenant,
        Array.from({ length: 1_500 }, (_, i) => indexed({ id: `${tenant}-${i}`, tenant, text: text(tenant, i) })),
      );
      answers.set(tenant, await searchIds(scratch.index, tenant, 'invoice order depot', embed(text(tenant, 42))));
      expect(scratch.index.memory().bytes).toBeLessThanOrEqual(16 * MiB);
    }
    expect(scratch.index.memory().openPartitions).toBeLessThan(tenants.length);
    expect(scratch.index.evictions).toBeGreaterThan(0);

    // Every tenant, evicted or not, answers exactly as it did when it was written, and recall keeps within the budget.
    for (const tenant of [...tenants].reverse()) {
      expect(await searchIds(scratch.index, tenant, 'invoice order depot', embed(text(tenant, 42)))).toEqual(answers.get(tenant));
      expect(await scratch.index.count(tenant)).toBe(1_500);
      expect(scratch.index.memory().bytes).toBeLessThanOrEqual(16 * MiB);
    }
  });

  it('are neither opened nor evicted by questions of the embedding lag or the pending vectors of every tenant', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS, memoryBudgetBytes: 1 });
    for (const tenant of tenants.slice(0, 4)) {
      // t0 holds vectors; the others wait for theirs (written without one).
      const records = Array.from({ length: 300 }, (_, i) => indexed({ id: `${tenant}-${i}`, tenant, text: text(tenant, i) }));
      await scratch.index.upsert(tenant, tenant === 't0' ? records : records.map(({ record }) => ({ record })));
    }
    await scratch.index.close();
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS, memoryBudgetBytes: 1 });
    // t0 at work (its graph loaded), as the embedding stage or recall keep one partition busy.
    const answer = await searchIds(scratch.index, 't0', 'invoice order depot', embed(text('t0', 42)));
    expect(scratch.index.memory().openPartitions).toBe(1);
    const evictions = scratch.index.evictions;
    // What /health and the embedding stage's sweep ask of every tenant, many times over.
    for (let round = 0; round < 5; round++) {
      expect(await scratch.index.embeddingLag()).toMatchObject({ pending: 900, reindexNeeded: [] });
      for (const tenant of tenants.slice(1, 4)) expect(await scratch.index.pendingEmbeddings(tenant, 1000)).toHaveLength(300);
      expect(await scratch.index.pendingEmbeddings('t0', 10)).toEqual([]);
    }
    expect(scratch.index.evictions).toBe(evictions);
    expect(scratch.index.memory().openPartitions).toBe(1);
    expect(await searchIds(scratch.index, 't0', 'invoice order depot', embed(text('t0', 42)))).toEqual(answer);
  });

  it('load no graph for text work, and rows written without a vector leave the saved graph as it is', async () => {
    const open = () => SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS, memoryBudgetBytes: 64 * MiB });
    scratch.index = await open();
    await scratch.index.upsert(
      't0',
      Array.from({ length: 1_500 }, (_, i) => indexed({ id: `t0-${i}`, tenant: 't0', text: text('t0', i) })),
    );
    // The dense route alone: rows added below without vectors do not change its answer.
    const answer = await searchIds(scratch.index, 't0', '', embed(text('t0', 42)));
    await scratch.index.close();
    const graphFile = join(scratch.dir, 'tenant-t0.usearch');
    const saved = { bytes: readFileSync(graphFile), mtimeMs: statSync(graphFile).mtimeMs };

    // What the projection and BM25 do before the embedding stage comes by: rows without vectors, reads, text searches.
    scratch.index = await open();
    await scratch.index.upsert(
      't0',
      Array.from({ length: 200 }, (_, i) => ({
        record: indexed({ id: `t0-text-${i}`, tenant: 't0', text: text('t0', 2_000 + i) }).record,
      })),
    );
    expect(await scratch.index.count('t0')).toBe(1_700);
    expect((await scratch.index.get('t0', 't0-7'))?.record.id).toBe('t0-7');
    expect(await searchIds(scratch.index, 't0', 'invoice order depot')).toHaveLength(10);
    expect(scratch.index.memory()).toMatchObject({ openPartitions: 1, loadedGraphs: 0 });
    const textOnly = scratch.index.memory().bytes;
    await scratch.index.close();
    expect(statSync(graphFile).mtimeMs).toBe(saved.mtimeMs);

    // The saved graph is still current: loaded as it is (not rebuilt, not rewritten) by the first vector search.
    scratch.index = await open();
    expect(await searchIds(scratch.index, 't0', '', embed(text('t0', 42)))).toEqual(answer);
    expect(scratch.index.memory()).toMatchObject({ openPartitions: 1, loadedGraphs: 1 });
    expect(scratch.index.memory().bytes).toBeGreaterThan(textOnly);
    await scratch.index.close();
    expect(readFileSync(graphFile).equals(saved.bytes)).toBe(true);
    expect(statSync(graphFile).mtimeMs).toBe(saved.mtimeMs);
  });

  it('are not closed under an iterator or a purge that is using them', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS, memoryBudgetBytes: 1 });
    for (const tenant of tenants.slice(0, 3)) {
      await scratch.index.upsert(
        tenant,
        Array.from({ length: 2_500 }, (_, i) => indexed({ id: `${tenant}-${i}`, tenant, text: text(tenant, i) })),
      );
    }
    // An iterator pages through t0 while other tenants are opened between its pages (each opening evicts the rest).
    let seen = 0;
    for await (const record of scratch.index.records('t0')) {
      seen++;
      if (seen % 500 === 0) await scratch.index.count(tenants[(seen / 500) % 3]);
      expect(record.tenant).toBe('t0');
    }
    expect(seen).toBe(2_500);
    // A purge awaits its file scan; other tenants opened meanwhile do not close the purging partition.
    const purging = scratch.index.purge('t1', ['t1-1', 't1-2']);
    await Promise.all([scratch.index.count('t0'), scratch.index.count('t2')]);
    await purging;
    expect(await scratch.index.count('t1')).toBe(2_498);
    expect(await searchIds(scratch.index, 't1', '', embed(text('t1', 1)))).not.toContain('t1-1');
  });
});
