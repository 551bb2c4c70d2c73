import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';

/**
 * Whether the SQLite key vault file at `path` holds tenant key material (data keys or subject pseudonyms):
 * then a data folder's records are wrapped there, and the transit vault, which would find none of them,
 * must not take over. A keys.db with other contents only (e.g. signing keys) does not count.
 */
export function sqliteVaultHoldsTenantKeys(path: string): boolean {
  if (!existsSync(path)) return false;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const has = (table: string) => {
      try {
        return db.prepare(`SELECT 1 FROM ${table} LIMIT 1`).get() !== undefined;
      } catch {
        return false; // no such table
      }
    };
    return has('data_keys') || has('subject_pseudonyms');
  } finally {
    db.close();
  }
}
