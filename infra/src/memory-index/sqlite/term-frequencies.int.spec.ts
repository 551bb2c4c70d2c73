import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TENANT_FTS_SCHEMA } from './schema';
import { TermFrequencies } from './term-frequencies';

describe('document frequencies of query terms (TermFrequencies)', () => {
  let db: Database.Database;
  let writes: number;
  let terms: TermFrequencies;
  /** Adds `n` documents containing `word`, counted as row writes the way the rows' triggers count them. */
  const add = (word: string, n: number): number[] => {
    const insert = db.prepare('INSERT INTO memories_fts (body) VALUES (?)');
    const rowids = Array.from({ length: n }, () => Number(insert.run(`${word} filler`).lastInsertRowid));
    writes += n;
    return rowids;
  };

  beforeEach(() => {
    db = new Database(':memory:');
    db.exec(TENANT_FTS_SCHEMA);
    writes = 0;
    terms = new TermFrequencies(db, () => writes);
  });
  afterEach(() => db.close());

  it('finds a word written after it was looked up as absent', () => {
    expect(terms.of('invoice')).toBe(0);
    add('invoice', 1);
    expect(terms.of('invoice')).toBe(1);
  });

  it('keeps a frequency while it cannot have drifted by more than an eighth, then reads it again', () => {
    add('common', 1_000);
    expect(terms.of('common')).toBe(1_000);
    add('common', 125);
    expect(terms.of('common')).toBe(1_000);
    add('common', 1);
    expect(terms.of('common')).toBe(1_126);
  });

  it('reads every frequency again once told to forget (a purge)', () => {
    const [rowid] = add('rare', 1);
    expect(terms.of('rare')).toBe(1);
    // The table stores no text (contentless): a document is deleted by its rowid.
    db.prepare('DELETE FROM memories_fts WHERE rowid = ?').run(rowid);
    terms.forget();
    expect(terms.of('rare')).toBe(0);
  });
});
