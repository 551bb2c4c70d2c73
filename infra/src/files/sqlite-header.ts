import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';

/** What a file's first bytes say it is. */
export type SqliteHeader =
  | { kind: 'missing' }
  /** A SQLite database; `userVersion` is `PRAGMA user_version` as the last committed transaction left it. */
  | { kind: 'sqlite'; userVersion: number }
  /** Not a SQLite database (another file, garbage, or a header too short). */
  | { kind: 'garbage' };

const MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const HEADER_BYTES = 100;
const USER_VERSION_OFFSET = 60;
const WAL_HEADER_BYTES = 32;
const WAL_FRAME_HEADER_BYTES = 24;

/**
 * Reads a SQLite file's header without opening it as a database: opening
 * (even read-only) a WAL-mode file creates `-wal` and `-shm` files beside it,
 * and a check made before ELMA starts must change nothing in the folder.
 *
 * A WAL left by a process that stopped without checkpointing may hold a newer
 * page 1 than the file: the last committed frame of page 1 in the WAL (same
 * salts as the WAL header, at or before the last commit frame) wins.
 * Checksums are not verified here; the adapters read the version again
 * through SQLite when they open the file.
 */
export function readSqliteHeader(path: string): SqliteHeader {
  if (!existsSync(path)) return { kind: 'missing' };
  const header = readAt(path, 0, HEADER_BYTES);
  if (!header || header.length < HEADER_BYTES || !header.subarray(0, MAGIC.length).equals(MAGIC)) return { kind: 'garbage' };
  const fromWal = walPageOne(`${path}-wal`, pageSizeOf(header));
  const page = fromWal ?? header;
  return { kind: 'sqlite', userVersion: page.readUInt32BE(USER_VERSION_OFFSET) };
}

/** The header's page size (1 stands for 65536). */
function pageSizeOf(header: Buffer): number {
  const size = header.readUInt16BE(16);
  return size === 1 ? 65_536 : size;
}

/** The first 100 bytes of the last committed copy of page 1 in the WAL, if any. */
function walPageOne(walPath: string, pageSize: number): Buffer | undefined {
  if (!existsSync(walPath)) return undefined;
  const fd = openSync(walPath, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size < WAL_HEADER_BYTES) return undefined;
    const walHeader = Buffer.alloc(WAL_HEADER_BYTES);
    readSync(fd, walHeader, 0, WAL_HEADER_BYTES, 0);
    const magic = walHeader.readUInt32BE(0);
    if (magic !== 0x377f0682 && magic !== 0x377f0683) return undefined;
    const walPageSize = walHeader.readUInt32BE(8);
    if (walPageSize !== pageSize) return undefined;
    const salts = walHeader.subarray(16, 24);
    const frameBytes = WAL_FRAME_HEADER_BYTES + pageSize;
    let pending: Buffer | undefined;
    let committed: Buffer | undefined;
    const frameHeader = Buffer.alloc(WAL_FRAME_HEADER_BYTES);
    for (let offset = WAL_HEADER_BYTES; offset + frameBytes <= size; offset += frameBytes) {
      readSync(fd, frameHeader, 0, WAL_FRAME_HEADER_BYTES, offset);
      if (!frameHeader.subarray(8, 16).equals(salts)) break;
      if (frameHeader.readUInt32BE(0) === 1) {
        pending = Buffer.alloc(HEADER_BYTES);
        readSync(fd, pending, 0, HEADER_BYTES, offset + WAL_FRAME_HEADER_BYTES);
      }
      // A commit frame: everything before it (including page 1 copies) is committed.
      if (frameHeader.readUInt32BE(4) !== 0) committed = pending ?? committed;
    }
    return committed;
  } finally {
    closeSync(fd);
  }
}

function readAt(path: string, position: number, length: number): Buffer | undefined {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const read = readSync(fd, buffer, 0, length, position);
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}
