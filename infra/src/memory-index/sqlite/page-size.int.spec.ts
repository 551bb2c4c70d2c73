import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { indexed, searchIds } from '../fixtures';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { PAGE_SIZE } from './tenant-partition';

const pageSize = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.pragma('page_size', { simple: true });
  } finally {
    db.close();
  }
};

/** A file made before 16 KB pages: SQLite's default 4 KB pages, set before anything else is written. */
function smallPagedFile(path: string): void {
  const db = new Database(path);
  db.pragma('page_size = 4096');
  db.pragma('journal_mode = WAL');
  db.close();
}

describe('index partition pages', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'elma-pages-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a new index partition is laid out in 16 KB pages', async () => {
    const index = await SqliteMemoryIndex.open({ dir: join(dir, 'index'), dimensions: 384 });
    await index.upsert('acme', [indexed({ id: 'm1', tenant: 'acme', text: 'invoice shipped to the depot' })]);
    await index.close();
    expect(pageSize(join(dir, 'index', 'tenant-acme.db'))).toBe(PAGE_SIZE);
  });

  it('a partition file made with 4 KB pages keeps them and keeps working', async () => {
    const index = await SqliteMemoryIndex.open({ dir: join(dir, 'index'), dimensions: 384 });
    await index.close();
    smallPagedFile(join(dir, 'index', 'tenant-acme.db'));
    const reopened = await SqliteMemoryIndex.open({ dir: join(dir, 'index'), dimensions: 384 });
    await reopened.upsert('acme', [indexed({ id: 'm1', tenant: 'acme', text: 'invoice shipped to the depot' })]);
    expect(await searchIds(reopened, 'acme', 'invoice depot')).toEqual(['m1']);
    await reopened.close();
    expect(pageSize(join(dir, 'index', 'tenant-acme.db'))).toBe(4096);
  });
});
