import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { readSqliteHeader } from './sqlite-header';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const folder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'elma-header-'));
  dirs.push(dir);
  return dir;
};

function walDatabase(path: string, userVersion: number): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (x)');
  db.pragma(`user_version = ${userVersion}`);
  db.close();
}

describe('reading a SQLite file’s format version from its header', () => {
  it('reads user_version of a closed WAL database, and creates no file beside it', () => {
    const dir = folder();
    walDatabase(join(dir, 'a.db'), 3);
    const before = readdirSync(dir);

    expect(readSqliteHeader(join(dir, 'a.db'))).toEqual({ kind: 'sqlite', userVersion: 3 });
    expect(readdirSync(dir)).toEqual(before);
  });

  it('says missing for no file, and garbage for a file that is not SQLite or is cut short', () => {
    const dir = folder();
    writeFileSync(join(dir, 'garbage.db'), Buffer.from('definitely not a database '.repeat(20)));
    writeFileSync(join(dir, 'short.db'), Buffer.from('SQLite format 3\0'));

    expect(readSqliteHeader(join(dir, 'none.db'))).toEqual({ kind: 'missing' });
    expect(readSqliteHeader(join(dir, 'garbage.db'))).toEqual({ kind: 'garbage' });
    expect(readSqliteHeader(join(dir, 'short.db'))).toEqual({ kind: 'garbage' });
  });

  it('reads the version a crashed writer committed to the WAL only, not the stale one in the file', () => {
    const dir = folder();
    const live = join(dir, 'live.db');
    walDatabase(live, 1);
    const db = new Database(live);
    try {
      db.pragma('wal_autocheckpoint = 0');
      db.pragma('user_version = 9');
      db.exec('INSERT INTO t VALUES (1)');
      // The files as a process killed now leaves them: the new page 1 is in the WAL only.
      const crashed = join(dir, 'crashed.db');
      copyFileSync(live, crashed);
      copyFileSync(`${live}-wal`, `${crashed}-wal`);
      expect(readSqliteHeader(crashed)).toEqual({ kind: 'sqlite', userVersion: 9 });
      // Without the WAL the file itself still says 1.
      rmSync(`${crashed}-wal`);
      expect(readSqliteHeader(crashed)).toEqual({ kind: 'sqlite', userVersion: 1 });
    } finally {
      db.close();
    }
  });
});
