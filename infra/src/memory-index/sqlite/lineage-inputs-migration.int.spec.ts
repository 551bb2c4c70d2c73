import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { indexed } from '../fixtures';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { scratchIndex } from './scratch.testing';

const T = 'acme';

/**
 * A partition file written before `memory_inputs`: opening it fills the table from the stored records, so
 * `lineageOf` finds a record by its parents and source events at once; a purge takes a row's entries with it.
 */
describe('a partition from before lineage inputs were kept', () => {
  const scratch = scratchIndex('lineage-inputs-migration');

  it('gains the inputs of its records, and loses a purged row’s', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 });
    const provenance = (sourceEventIds: string[], parentIds: string[]) => ({ sourceEventIds, parentIds, rule: 'test', ruleVersion: '1' });
    await scratch.index.upsert(T, [
      indexed({ id: 'turn', tenant: T, text: 'a turn', provenance: provenance(['evt-1'], []) }),
      indexed({ id: 'view', tenant: T, text: 'a view of it', provenance: provenance([], ['turn']) }),
    ]);
    await scratch.index.close();

    const db = new Database(join(scratch.dir, `tenant-${T}.db`));
    db.exec('DROP TABLE memory_inputs');
    db.close();

    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384 });
    const of = async (ids: string[]) => (await scratch.index!.lineageOf(T, { ids })).map((e) => e.id);
    expect(await of(['evt-1'])).toEqual(['turn']);
    expect(await of(['turn'])).toEqual(['turn', 'view']);

    await scratch.index.purge(T, ['view']);
    await scratch.index.close();
    scratch.index = undefined;
    const reopened = new Database(join(scratch.dir, `tenant-${T}.db`), { readonly: true });
    const inputs = reopened.prepare('SELECT input FROM memory_inputs ORDER BY input').pluck().all();
    reopened.close();
    expect(inputs).toEqual(['evt-1']);
  });
});
