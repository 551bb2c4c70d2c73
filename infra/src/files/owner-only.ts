import { chmodSync, existsSync, writeFileSync } from 'node:fs';

/** Owner read and write, nothing for group or others: the files hold ciphertext, keys and index plaintext. */
export const OWNER_ONLY = 0o600;

/**
 * Makes a SQLite database file owner-only before SQLite opens it. SQLite
 * creates a missing file with 0644 (less the umask) and gives its -wal,
 * -shm and -journal files the mode of the database file, so creating the
 * database file 0600 first covers all of them. A file left 0644 by an older
 * version is tightened, with its companions. chmod opens no descriptor, so
 * this is safe on a file another connection of this process holds.
 */
export function ownerOnlyDatabaseFile(path: string): void {
  if (path === '' || path === ':memory:') return;
  try {
    writeFileSync(path, '', { mode: OWNER_ONLY, flag: 'wx' });
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    if (existsSync(file)) chmodSync(file, OWNER_ONLY);
  }
}
