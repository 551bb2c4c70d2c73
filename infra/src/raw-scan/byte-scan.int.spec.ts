import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { takeExclusively } from '../../../tests/support/sqlite-exclusive';
import { scanFiles } from './byte-scan';

/**
 * The scan reads the live databases of the process that runs it. POSIX locks
 * vanish when any descriptor of the file is closed, so reading them from this
 * process would hand the files to whichever process opens them next.
 */
describe('the byte scan on live databases', () => {
  const dir = mkdtempSync(join(tmpdir(), 'elma-scan-locks-'));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('leaves the locks of the process that holds the database in place', async () => {
    const path = join(dir, 'live.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (text TEXT)');
    db.prepare('INSERT INTO t VALUES (?)').run('a sentence that an erasure must not leave behind');
    expect(takeExclusively(path)).toBe('busy');

    const report = await scanFiles([path, `${path}-wal`, `${path}-shm`], [{ id: 'r1', bytes: Buffer.from('must not leave behind') }]);

    expect(report.findings.map((f) => f.needleId)).toContain('r1');
    expect(takeExclusively(path)).toBe('busy');
    db.close();
  });
});
