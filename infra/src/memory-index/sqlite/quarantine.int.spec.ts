import { openSync, closeSync, writeSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IndexPartitionCorrupt } from '@elma/domain';
import { embed, indexed, searchIds } from '../fixtures';
import { SqliteMemoryIndex } from './sqlite-memory-index';

const DIMENSIONS = 384;

/** Overwrites `length` bytes of a file at `offset` with random bytes, as a failing disk or a stray write would. */
function damage(path: string, offset: number, length: number): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, randomBytes(length), 0, length, offset);
  closeSync(fd);
}

const seed = async (index: SqliteMemoryIndex, tenant: string, n = 200) =>
  index.upsert(tenant, Array.from({ length: n }, (_, i) => indexed({ id: `${tenant}-${i}`, tenant, text: `${tenant} shipment ${i} left the depot on day ${i % 30}` })));

describe('a corrupt tenant partition', () => {
  let dir: string;
  let index: SqliteMemoryIndex | undefined;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'elma-quarantine-'))));
  afterEach(async () => {
    await index?.close();
    index = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['its header overwritten', 0, 4096],
    ['pages in the middle overwritten', 8192, 64 * 1024],
  ])('with %s is quarantined by name while the other tenants keep answering, and stays so after a restart', async (_, offset, length) => {
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    await seed(index, 'good');
    await index.upsert('good', [indexed({ id: 'good-zanzibar', tenant: 'good', text: 'the Zanzibar office closes at noon' })]);
    await seed(index, 'bad', 2_000);
    await index.close();
    const file = join(dir, 'tenant-bad.db');
    damage(file, offset, length);
    const damaged = readFileSync(file);

    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    // Reads of the damaged tenant fail with the typed error, naming the tenant only.
    const failure = await index
      .search({ tenant: 'bad', text: 'shipment depot', vector: embed('bad shipment 3'), limit: 10, filter: { statuses: ['active'], maxSensitivity: 'restricted', now: '2025-01-01T00:00:00.000Z' } })
      .then(() => index!.count('bad'))
      .then(() => index!.currentFacts('bad', 'x'))
      .then(() => Promise.all(Array.from({ length: 2_000 }, (_, i) => index!.get('bad', `bad-${i}`))))
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(IndexPartitionCorrupt);
    expect(failure).toMatchObject({ code: 'INDEX.PARTITION_CORRUPT', details: { tenant: 'bad' } });
    expect((failure as Error).message).not.toMatch(/shipment|depot/);
    // then every call for it fails at once, writes included, and its files are left as they were,
    await expect(seed(index, 'bad', 1)).rejects.toBeInstanceOf(IndexPartitionCorrupt);
    await expect(index.count('bad')).rejects.toBeInstanceOf(IndexPartitionCorrupt);
    expect(readFileSync(file).equals(damaged)).toBe(true);
    expect(await index.quarantined()).toEqual(['bad']);
    // while the other tenant reads and writes as before.
    expect((await searchIds(index, 'good', 'zanzibar', embed('the Zanzibar office closes at noon')))[0]).toBe('good-zanzibar');
    await index.upsert('good', [indexed({ id: 'good-new', tenant: 'good', text: 'a new note' })]);
    expect(await index.count('good')).toBe(202);

    // The quarantine outlives a restart, and a drop (which does not read the files) lifts it.
    await index.close();
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    expect(await index.quarantined()).toEqual(['bad']);
    await expect(index.count('bad')).rejects.toBeInstanceOf(IndexPartitionCorrupt);
    await index.dropTenant('bad');
    expect(await index.quarantined()).toEqual([]);
    await seed(index, 'bad', 5);
    expect(await index.count('bad')).toBe(5);
  });

  it('is deleted whole by a purge (no plaintext left behind) and stays quarantined until a rebuild', async () => {
    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    await seed(index, 'bad');
    await index.close();
    damage(join(dir, 'tenant-bad.db'), 0, 4096);

    index = await SqliteMemoryIndex.open({ dir, dimensions: DIMENSIONS });
    await index.purge('bad', ['bad-3']);

    expect(readdirSync(dir).filter((file) => file.startsWith('tenant-bad'))).toEqual([]);
    expect(await index.quarantined()).toEqual(['bad']);
    await expect(index.get('bad', 'bad-4')).rejects.toBeInstanceOf(IndexPartitionCorrupt);
  });
});
