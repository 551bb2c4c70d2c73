import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { FormatName, FoundFormat } from '@elma/domain';
import { readSqliteHeader } from './sqlite-header';

/** Which embedded engines keep files in the data folder. */
export interface EmbeddedFiles {
  /** `events.db` (not with EventStoreDB). */
  eventLog: boolean;
  /** `index/meta.db` and `index/tenant-<t>.db` (not with Elasticsearch). */
  index: boolean;
}

/** A partition file name; tenant ids are checked again by the index before use. */
const PARTITION = /^tenant-([A-Za-z0-9][A-Za-z0-9_.-]{0,127})\.db$/;

/**
 * The version every embedded engine file of the data folder carries, read
 * from the files' headers without opening them (see `readSqliteHeader`):
 * nothing in the folder is created or changed. Missing files are left out
 * (a new folder, or an engine not used). `temporal.db` is Temporal's own
 * and not listed; the usearch graph files are checked by the index against
 * the digest it recorded (a mismatch is rebuilt from the rows).
 */
export function inspectDataFolder(dataDir: string, engines: EmbeddedFiles): FoundFormat[] {
  const found: FoundFormat[] = [];
  const add = (file: string, format: FormatName, tenant?: string) => {
    const header = readSqliteHeader(join(dataDir, file));
    if (header.kind === 'missing') return;
    found.push({
      file,
      format,
      version: header.kind === 'sqlite' ? header.userVersion : undefined,
      ...(tenant !== undefined ? { tenant } : {}),
    });
  };
  if (engines.eventLog) add('events.db', 'eventLog');
  add('keys.db', 'keyVault');
  if (engines.index && existsSync(join(dataDir, 'index'))) {
    add('index/meta.db', 'indexMeta');
    for (const name of readdirSync(join(dataDir, 'index')).sort()) {
      const tenant = PARTITION.exec(name)?.[1];
      if (tenant !== undefined) add(`index/${name}`, 'indexRows', tenant);
    }
  }
  return found;
}

/**
 * Writes `version` as the SQLite file's `user_version` if it carries a lower
 * one, through a connection of its own (the adapter may hold the file open:
 * WAL mode lets both). For files whose format is unchanged since before
 * versions were recorded, this stamp is the whole migration.
 */
export function stampSqliteVersion(path: string, version: number): void {
  if (!existsSync(path)) return;
  const db = new Database(path, { fileMustExist: true, timeout: 5_000 });
  try {
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current < version) db.pragma(`user_version = ${Math.trunc(version)}`);
  } finally {
    db.close();
  }
}
