import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import Database from 'better-sqlite3';

/**
 * Where a data folder's bytes are, per ingested event (with its episodic
 * memory): every file of the folder, by engine, and inside the index
 * partitions (SQLite) by table, from SQLite's `dbstat` view: the record rows,
 * the FTS5 index and its stored text, the secondary indexes, the rest.
 */

/** The engine a data-folder file belongs to, by its path relative to the folder. */
export type FileGroup = 'event log' | 'index partitions' | 'vector graphs' | 'key vault' | 'other files';

/** The parts an index partition file is split into. */
export type PartitionPart =
  'record rows' | 'FTS index' | 'FTS stored text' | 'FTS doc sizes and config' | 'secondary indexes' | 'other tables' | 'free pages, WAL';

/** The parts in the order they are printed. */
const PARTITION_PARTS: readonly PartitionPart[] = [
  'record rows',
  'FTS index',
  'FTS stored text',
  'FTS doc sizes and config',
  'secondary indexes',
  'other tables',
  'free pages, WAL',
];

const PARTITION = /^index\/tenant-[^/]+\.db(-wal|-shm)?$/;

export function fileGroupOf(path: string): FileGroup {
  const posix = path.split(sep).join('/');
  if (/^events\.db(-wal|-shm)?$/.test(posix)) return 'event log';
  if (PARTITION.test(posix)) return 'index partitions';
  if (/^index\/[^/]+\.usearch(\.tmp)?$/.test(posix)) return 'vector graphs';
  if (/^(kms-)?keys\.db(-wal|-shm)?$/.test(posix)) return 'key vault';
  return 'other files';
}

/**
 * The part of a partition file a `dbstat` b-tree belongs to. FTS5 keeps its
 * index in `<table>_data` (and `_idx`), the indexed text in `_content`, and
 * per-row sizes in `_docsize`; `indexes` names the b-trees that are indexes.
 */
export function partitionPartOf(btree: string, indexes: ReadonlySet<string>): Exclude<PartitionPart, 'free pages, WAL'> {
  if (btree === 'memories') return 'record rows';
  if (indexes.has(btree) || btree.startsWith('sqlite_autoindex_')) return 'secondary indexes';
  const fts = /^memories_fts_(\w+)$/.exec(btree)?.[1];
  if (fts === 'data' || fts === 'idx') return 'FTS index';
  if (fts === 'content') return 'FTS stored text';
  if (fts !== undefined) return 'FTS doc sizes and config';
  return 'other tables';
}

/** Bytes of each file group, of each part of the partitions, and the payload of the rows' vectors and JSON records. */
export interface StorageBreakdown {
  files: Map<FileGroup, number>;
  partitions: Map<PartitionPart, number>;
  /** Bytes of the vector BLOBs and of the JSON records inside the record rows (payload, without page overhead). */
  rowPayload: { vectors: number; records: number };
  /** The SQLite event log's b-trees and its payload by event type (absent on EventStoreDB). */
  eventLog?: EventLogMeasure;
  total: number;
}

/** Where `events.db`'s bytes are: its b-trees by part, and each event type's count and stored data + metadata bytes. */
export interface EventLogMeasure {
  parts: Map<'event rows' | 'stream names' | 'indexes' | 'other', number>;
  types: { type: string; events: number; bytes: number }[];
}

/** A partition file as measured: its b-trees' page bytes, which of them are indexes, its bytes on disk (with WAL). */
export interface PartitionMeasure {
  btrees: { name: string; bytes: number }[];
  indexes: ReadonlySet<string>;
  fileBytes: number;
  vectorBytes: number;
  recordBytes: number;
}

/**
 * Adds up the files and the partitions' b-trees. A partition's bytes on disk
 * that no b-tree holds (free pages, the WAL and its index) are their own part,
 * so the parts of the partitions add up to their files.
 */
export function breakdown(files: readonly { path: string; bytes: number }[], partitions: readonly PartitionMeasure[]): StorageBreakdown {
  const groups = new Map<FileGroup, number>();
  for (const group of ['event log', 'index partitions', 'vector graphs', 'key vault', 'other files'] as const) groups.set(group, 0);
  for (const file of files) groups.set(fileGroupOf(file.path), groups.get(fileGroupOf(file.path))! + file.bytes);
  const parts = new Map<PartitionPart, number>(PARTITION_PARTS.map((part) => [part, 0]));
  const rowPayload = { vectors: 0, records: 0 };
  for (const partition of partitions) {
    let held = 0;
    for (const btree of partition.btrees) {
      const part = partitionPartOf(btree.name, partition.indexes);
      parts.set(part, parts.get(part)! + btree.bytes);
      held += btree.bytes;
    }
    parts.set('free pages, WAL', parts.get('free pages, WAL')! + Math.max(0, partition.fileBytes - held));
    rowPayload.vectors += partition.vectorBytes;
    rowPayload.records += partition.recordBytes;
  }
  return { files: groups, partitions: parts, rowPayload, total: files.reduce((sum, f) => sum + f.bytes, 0) };
}

/** Bytes in KB (1,024) per event, one decimal. */
export function perEvent(bytes: number, events: number): string {
  return `${(bytes / 1024 / Math.max(1, events)).toFixed(2)} KB`;
}

/** Measures a data folder: every file's size, and each index partition through `dbstat` on a read-only connection. */
export function measureStorage(dataDir: string): StorageBreakdown {
  const files = listFiles(dataDir).flatMap((path) => {
    // A file may go between the listing and its stat (a graph's temporary file): it holds nothing then.
    const stat = statSync(path, { throwIfNoEntry: false });
    return stat ? [{ path: relative(dataDir, path), bytes: stat.size }] : [];
  });
  const partitions = files
    .filter((f) => /tenant-[^/]+\.db$/.test(f.path) && fileGroupOf(f.path) === 'index partitions')
    .map((f) => {
      const onDisk = files.filter((g) => g.path === f.path || g.path === `${f.path}-wal` || g.path === `${f.path}-shm`);
      return measurePartition(
        join(dataDir, f.path),
        onDisk.reduce((sum, g) => sum + g.bytes, 0),
      );
    });
  const eventLog = files.some((f) => f.path === 'events.db') ? measureEventLog(join(dataDir, 'events.db')) : undefined;
  return { ...breakdown(files, partitions), ...(eventLog ? { eventLog } : {}) };
}

/** `events.db` through `dbstat` and a pass over its rows, on a read-only connection. */
function measureEventLog(path: string): EventLogMeasure {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const parts: EventLogMeasure['parts'] = new Map([
      ['event rows', 0],
      ['stream names', 0],
      ['indexes', 0],
      ['other', 0],
    ]);
    for (const { name, bytes } of db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all() as {
      name: string;
      bytes: number;
    }[]) {
      const part =
        name === 'event_rows'
          ? 'event rows'
          : name === 'streams' || name === 'sqlite_autoindex_streams_1'
            ? 'stream names'
            : name.startsWith('sqlite_autoindex_')
              ? 'indexes'
              : 'other';
      parts.set(part, parts.get(part)! + bytes);
    }
    const types = db
      .prepare(
        'SELECT type, count(*) AS events, sum(length(CAST(data AS BLOB)) + length(CAST(metadata AS BLOB))) AS bytes FROM event_rows GROUP BY type ORDER BY bytes DESC',
      )
      .all() as EventLogMeasure['types'];
    return { parts, types };
  } finally {
    db.close();
  }
}

function measurePartition(path: string, fileBytes: number): PartitionMeasure {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const btrees = db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all() as { name: string; bytes: number }[];
    const indexes = new Set(
      (db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'index'`).all() as { name: string }[]).map((r) => r.name),
    );
    // Bytes, not characters (CAST); a column a later format no longer has counts nothing.
    const columns = new Set((db.pragma('table_info(memories)') as { name: string }[]).map((c) => c.name));
    const sum = (column: string) =>
      columns.has(column)
        ? ((db.prepare(`SELECT sum(length(CAST(${column} AS BLOB))) AS bytes FROM memories`).get() as { bytes: number | null }).bytes ?? 0)
        : 0;
    return { btrees, indexes, fileBytes, vectorBytes: sum('vector'), recordBytes: sum('record') };
  } finally {
    db.close();
  }
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listFiles(path);
    return entry.isFile() ? [path] : [];
  });
}
