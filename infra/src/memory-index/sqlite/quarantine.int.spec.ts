import { openSync, closeSync, writeSync, readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IndexPartitionCorrupt } from '@elma/domain';
import { embed, indexed, searchIds } from '../fixtures';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { scratchIndex } from './scratch.testing';

const DIMENSIONS = 384;

/** Overwrites `length` bytes of a file at `offset` with random bytes, as a failing disk or a stray write would. */
function damage(path: string, offset: number, length: number): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, randomBytes(length), 0, length, offset);
  closeSync(fd);
}

const seed = async (index: SqliteMemoryIndex, tenant: string, n = 200) =>
  index.upsert(
    tenant,
    Array.from({ length: n }, (_, i) =>
      indexed({ id: `${tenant}-${i}`, tenant, text: `${tenant} shipment ${i} left the depot on day ${i % 30}` }),
    ),
  );

describe('a corrupt tenant partition', () => {
  const scratch = scratchIndex('quarantine');

  it.each([
    ['its header overwritten', 0, 4096],
    ['pages in the middle overwritten', 8192, 64 * 1024],
  ])('with %s is quarantined by name while the other tenants keep answering, and stays so after a restart', async (_, offset, length) => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    await seed(scratch.index, 'good');
    await scratch.index.upsert('good', [indexed({ id: 'good-zanzibar', tenant: 'good', text: 'the Zanzibar office closes at noon' })]);
    await seed(scratch.index, 'bad', 2_000);
    await scratch.index.close();
    const file = join(scratch.dir, 'tenant-bad.db');
    damage(file, offset, length);
    const damaged = readFileSync(file);

    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    // Reads of the damaged tenant fail with the typed error, naming the tenant only.
    const failure = await scratch.index
      .search({
        tenant: 'bad',
        text: 'shipment depot',
        vector: embed('bad shipment 3'),
        limit: 10,
        filter: { statuses: ['active'], maxSensitivity: 'restricted', now: '2025-01-01T00:00:00.000Z' },
      })
      .then(() => scratch.index!.count('bad'))
      .then(() => scratch.index!.currentFacts('bad', 'x'))
      .then(() => Promise.all(Array.from({ length: 2_000 }, (_, i) => scratch.index!.get('bad', `bad-${i}`))))
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(IndexPartitionCorrupt);
    expect(failure).toMatchObject({ code: 'INDEX.PARTITION_CORRUPT', details: { tenant: 'bad' } });
    expect((failure as Error).message).not.toMatch(/shipment|depot/);
    // then every call for it fails at once, writes included, and its files are left as they were,
    await expect(seed(scratch.index, 'bad', 1)).rejects.toBeInstanceOf(IndexPartitionCorrupt);
    await expect(scratch.index.count('bad')).rejects.toBeInstanceOf(IndexPartitionCorrupt);
    expect(readFileSync(file).equals(damaged)).toBe(true);
    expect(await scratch.index.quarantined()).toEqual(['bad']);
    // while the other tenant reads and writes as before.
    expect((await searchIds(scratch.index, 'good', 'zanzibar', embed('the Zanzibar office closes at noon')))[0]).toBe('good-zanzibar');
    await scratch.index.upsert('good', [indexed({ id: 'good-new', tenant: 'good', text: 'a new note' })]);
    expect(await scratch.index.count('good')).toBe(202);

    // The quarantine outlives a restart, and a drop (which does not read the files) lifts it.
    await scratch.index.close();
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    expect(await scratch.index.quarantined()).toEqual(['bad']);
    await expect(scratch.index.count('bad')).rejects.toBeInstanceOf(IndexPartitionCorrupt);
    await scratch.index.dropTenant('bad');
    expect(await scratch.index.quarantined()).toEqual([]);
    await seed(scratch.index, 'bad', 5);
    expect(await scratch.index.count('bad')).toBe(5);
  });

  it('is deleted whole by a purge (no plaintext left behind) and stays quarantined until a rebuild', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    await seed(scratch.index, 'bad');
    await scratch.index.close();
    damage(join(scratch.dir, 'tenant-bad.db'), 0, 4096);

    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    await scratch.index.purge('bad', ['bad-3']);

    expect(readdirSync(scratch.dir).filter((file) => file.startsWith('tenant-bad'))).toEqual([]);
    expect(await scratch.index.quarantined()).toEqual(['bad']);
    await expect(scratch.index.get('bad', 'bad-4')).rejects.toBeInstanceOf(IndexPartitionCorrupt);
  });
});
