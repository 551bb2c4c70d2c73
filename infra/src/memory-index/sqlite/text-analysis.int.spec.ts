import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TEXT_ANALYSIS, documentAnalysisCode } from '@elma/domain';
import { indexed, searchIds } from '../fixtures';
import { scratchIndex } from './scratch.testing';
import { SqliteMemoryIndex } from './sqlite-memory-index';

const T = 'tenant-a';
const DIMENSIONS = 384;
/** What releases before text analysis indexed: the tokenizer's words, unstemmed, without date words. */
const PLAIN = { stopWords: false, stem: false, dateWords: false };

const memories = () => [
  indexed({ id: 'paint', tenant: T, text: 'Melanie: I painted a sunrise over the lake.', validFrom: '2023-05-08T13:56:00.000Z' }),
  indexed({ id: 'zh-risk', tenant: T, text: '猎鹰项目的交付风险很高，需要增加人手。', validFrom: '2023-06-14T09:00:00.000Z' }),
  indexed({ id: 'budget', tenant: T, text: 'budget approved for the falcon project' }),
  indexed({ id: 'budget', tenant: T, text: 'budget rejected for the eagle project', version: 2, revisedAt: '2024-02-01T00:00:00.000Z' }),
];

/** The partition file as SQLite holds it: its FTS terms, FTS row count and analysis marker. */
function inspect(dir: string) {
  const db = new Database(join(dir, `tenant-${T}.db`), { readonly: true });
  try {
    return {
      terms: new Set((db.prepare('SELECT term FROM memories_vocab').all() as { term: string }[]).map((r) => r.term)),
      ftsRows: (db.prepare('SELECT count(*) AS n FROM memories_fts').get() as { n: number }).n,
      rows: (db.prepare('SELECT count(*) AS n FROM memories').get() as { n: number }).n,
      analysis: (db.prepare(`SELECT value FROM partition_state WHERE key = 'text_analysis'`).get() as { value: number } | undefined)?.value,
    };
  } finally {
    db.close();
  }
}

/** Whether the partition's FTS table keeps a copy of its text (`memories_fts_content`, the layout of older files). */
function storedFtsText(dir: string): boolean {
  const db = new Database(join(dir, `tenant-${T}.db`), { readonly: true });
  try {
    return db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'memories_fts_content'`).get() !== undefined;
  } finally {
    db.close();
  }
}

describe('SqliteMemoryIndex text analysis', () => {
  const scratch = scratchIndex('text-analysis');

  it('re-derives the terms of a partition written before text analysis, past versions included, when it is opened', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS, text: PLAIN });
    await scratch.index.upsert(T, memories());
    await scratch.index.close();
    // Such a file has no analysis marker at all.
    const db = new Database(join(scratch.dir, `tenant-${T}.db`));
    db.prepare(`DELETE FROM partition_state WHERE key = 'text_analysis'`).run();
    db.close();
    const before = inspect(scratch.dir);
    expect(before.analysis).toBeUndefined();
    expect(before.terms).toContain('painted');
    expect(before.terms).not.toContain('monday');

    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    expect(await searchIds(scratch.index, T, 'paintings')).toEqual(['paint']);
    expect((await searchIds(scratch.index, T, 'What happened on Monday, 8 May 2023?'))[0]).toBe('paint');
    expect((await searchIds(scratch.index, T, '交付风险'))[0]).toBe('zh-risk');
    expect((await searchIds(scratch.index, T, '2023年6月14日'))[0]).toBe('zh-risk');
    await scratch.index.close();
    scratch.index = undefined;

    const after = inspect(scratch.dir);
    expect(after.analysis).toBe(documentAnalysisCode(DEFAULT_TEXT_ANALYSIS));
    expect(after.terms).toContain('paint');
    expect(after.terms).not.toContain('painted');
    // Both versions of 'budget' keep their terms (knownAsOf reaches the older one).
    expect(after.rows).toBe(4);
    expect(after.ftsRows).toBe(after.rows);
    expect(after.terms).toContain('falcon');
  });

  it('rebuilds a partition whose FTS table stored its text (before it was contentless) on open, and purges it without a trace', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    await scratch.index.upsert(T, memories());
    await scratch.index.close();
    // The layout of files from before: the FTS table kept its own copy of the text (here the raw words, unstemmed).
    const db = new Database(join(scratch.dir, `tenant-${T}.db`));
    db.exec(`DROP TABLE memories_vocab; DROP TABLE memories_fts;
      CREATE VIRTUAL TABLE memories_fts USING fts5(body, tokenize = 'unicode61');
      CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, 'row');
      INSERT INTO memories_fts (rowid, body) SELECT rowid, json_extract(record, '$.content.text') FROM memories;`);
    db.close();
    expect(storedFtsText(scratch.dir)).toBe(true);

    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    expect(await searchIds(scratch.index, T, 'paintings')).toEqual(['paint']);
    expect((await searchIds(scratch.index, T, '交付风险'))[0]).toBe('zh-risk');
    await scratch.index.purge(T, ['paint']);
    expect(await searchIds(scratch.index, T, 'sunrise')).toEqual([]);
    await scratch.index.close();
    scratch.index = undefined;

    expect(storedFtsText(scratch.dir)).toBe(false);
    const after = inspect(scratch.dir);
    expect(after.ftsRows).toBe(after.rows);
    expect(after.terms).toContain('falcon');
    // Document frequencies still come from the index, and a purged document left none of its terms.
    expect(after.terms).not.toContain('sunris');
    expect(after.terms).not.toContain('lake');
  });

  it('never mixes analyses: opening with other options re-derives every row, and opening again as before restores them', async () => {
    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    await scratch.index.upsert(T, memories());
    expect(await searchIds(scratch.index, T, 'paintings')).toEqual(['paint']);
    await scratch.index.close();

    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS, text: { stem: false } });
    expect(await searchIds(scratch.index, T, 'paintings')).toEqual([]);
    expect(await searchIds(scratch.index, T, 'painted')).toEqual(['paint']);
    await scratch.index.upsert(T, [indexed({ id: 'later', tenant: T, text: 'Caroline paints birds.' })]);
    expect(await searchIds(scratch.index, T, 'paints')).toEqual(['later']);
    await scratch.index.close();

    scratch.index = await SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: DIMENSIONS });
    expect((await searchIds(scratch.index, T, 'paintings')).sort()).toEqual(['later', 'paint']);
    expect((await searchIds(scratch.index, T, '交付风险'))[0]).toBe('zh-risk');
  });
});
