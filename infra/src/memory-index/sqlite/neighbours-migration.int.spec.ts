import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { FORMAT_VERSIONS, RECALLABLE_STATUSES } from '@elma/domain';
import { embed, indexed, searchIds } from '../fixtures';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { scratchIndex } from './scratch.testing';
import { DEFAULT_EXPANSION_ADD } from './vector-graph';

const T = 'acme';
const filter = { statuses: RECALLABLE_STATUSES, maxSensitivity: 'restricted' as const, now: '2025-01-01T00:00:00.000Z' };

/**
 * A partition file written before neighbours and ef_construction 128: no subject or session column, and a
 * graph built with 16; its rows of format 1 keep whole records. Opening it backfills the columns from the stored records; the graph is rebuilt when
 * it is first loaded (by a vector search).
 */
describe('a partition from before neighbour smoothing', () => {
  const scratch = scratchIndex('neighbours-migration');

  it('gains subject and session from its records, finds neighbours, and rebuilds its graph with the current ef_construction', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384, formats: { ...FORMAT_VERSIONS, indexRows: 1 } });
    const turn = (id: string, minute: number) =>
      indexed({
        id,
        tenant: T,
        kind: 'episodic',
        subject: 'alice',
        session: 'chat-1',
        text: `turn ${id}`,
        validFrom: new Date(Date.UTC(2024, 0, 1, 10, minute)).toISOString(),
        policy: { owner: 'alice' },
      });
    await scratch.index.upsert(T, [turn('a', 0), turn('b', 1), turn('c', 2)]);
    await scratch.index.close();

    const db = new Database(join(scratch.dir, `tenant-${T}.db`));
    db.exec(
      `DROP INDEX memories_timeline; DROP INDEX memories_by_subject; ALTER TABLE memories DROP COLUMN subject; ALTER TABLE memories DROP COLUMN session;`,
    );
    db.prepare(`UPDATE partition_state SET value = 16 WHERE key = 'graph_expansion_add'`).run();
    db.close();

    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 });
    const [b] = await scratch.index.neighbours(T, ['b'], filter);
    expect([b.previous?.record.id, b.next?.record.id]).toEqual(['a', 'c']);
    expect(await searchIds(scratch.index, T, '', embed('turn b'))).toContain('b');
    await scratch.index.close();
    scratch.index = undefined;

    const reopened = new Database(join(scratch.dir, `tenant-${T}.db`), { readonly: true });
    const builtWith = reopened.prepare(`SELECT value FROM partition_state WHERE key = 'graph_expansion_add'`).pluck().get();
    reopened.close();
    expect(builtWith).toBe(DEFAULT_EXPANSION_ADD);
  });
});
