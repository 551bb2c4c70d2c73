import { spawnSync } from 'node:child_process';

/**
 * Asks another process to take a SQLite database for itself by leaving WAL
 * mode, which SQLite allows only when no other process has the database open.
 * 'busy' means some process still holds it (its locks are in place);
 * 'taken' means the file looked abandoned, which for a live database means
 * its owner's locks were lost.
 */
export function takeExclusively(path: string): 'busy' | 'taken' {
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(process.argv[1], { timeout: 0 });
    try { db.pragma('journal_mode = DELETE'); process.stdout.write('taken'); }
    catch (error) { process.stdout.write(error.code === 'SQLITE_BUSY' ? 'busy' : 'error ' + error.code); }
  `;
  // cwd: the repository root, where better-sqlite3 resolves.
  const result = spawnSync(process.execPath, ['-e', script, path], {
    cwd: new URL('../..', import.meta.url).pathname,
    encoding: 'utf8',
    env: {},
  });
  const out = result.stdout.trim();
  if (out !== 'busy' && out !== 'taken') throw new Error(`probe of ${path} failed: ${out || result.stderr}`);
  return out;
}
