import { spawn } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

import type { Needle, ScanFinding, ScanReport } from '@elma/domain';

export type { Needle, ScanFinding, ScanReport } from '@elma/domain';

/**
 * Shorter needles are not searched: below 8 bytes a random match in a few MB
 * of pages and vectors is likely, and the index works on 8-byte windows
 * (ANCHOR_BYTES in byte-scan-process.mjs, which must stay equal).
 */
export const MIN_NEEDLE_BYTES = 8;

/** Bytes read from a file per step, on top of the overlap kept from the previous step. */
export const CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Every regular file under `roots`, sorted, without duplicates. Roots that do
 * not exist are skipped. A root that is itself a symlink is followed (the
 * caller named it), but links found inside are not, so the walk stays inside
 * the data folder and cannot loop. `exclude` prunes files and whole folders.
 */
export async function listFiles(roots: string[], options: { exclude?: (path: string) => boolean } = {}): Promise<string[]> {
  const exclude = options.exclude ?? (() => false);
  const found = new Set<string>();

  async function walk(dir: string): Promise<void> {
    const entries = await ifExists(() => readdir(dir, { withFileTypes: true }));
    for (const entry of entries ?? []) {
      const path = join(dir, entry.name);
      if (exclude(path)) continue;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) found.add(path);
    }
  }

  for (const root of roots) {
    const path = join(root);
    if (exclude(path)) continue;
    const info = await ifExists(() => stat(path));
    if (info?.isDirectory()) await walk(path);
    else if (info?.isFile()) found.add(path);
  }
  return [...found].sort();
}

/** Longest a scan may run before it is abandoned (a stuck disk must not hold an erasure step forever). */
const SCAN_TIMEOUT_MS = 10 * 60_000;

/**
 * A scan is shared among several processes only when each gets at least
 * this many bytes: below it, starting a process costs more than it saves.
 */
export const MIN_SHARE_BYTES = 64 * 1024 * 1024;

/** How many processes a large scan is shared among: the cores, at most 4. */
export const defaultScanProcesses = (): number => Math.min(availableParallelism(), 4);

export interface ScanOptions {
  /** Processes to share the bytes among (default: the cores, at most 4); fewer when the files are small. */
  processes?: number;
  /** The fewest bytes worth a process of its own (default MIN_SHARE_BYTES). */
  minShareBytes?: number;
}

/** The part of a file from `start` up to `end` (null: to the end of the file, however long it has grown). */
export interface Segment {
  path: string;
  start: number;
  end: number | null;
}

/**
 * Searches every file for every needle in one pass, reading it in chunks.
 * Reports each (needle, file) pair at most once, at its first offset. Files
 * that vanish or cannot be opened after listing are skipped (SQLite -wal and
 * -shm files come and go); an opened file is read to its end.
 *
 * The bytes are shared among up to `processes` scan processes
 * (byte-scan-process.mjs), a large file cut into segments, so a scan of a
 * large data folder uses every core. They are read by child processes, never
 * by this one: the scanned files include the live SQLite databases this
 * process holds, and closing any descriptor of such a file would release
 * every POSIX lock the process holds on it, letting another process treat
 * the live database as abandoned.
 */
export async function scanFiles(paths: string[], needles: Needle[], options: ScanOptions = {}): Promise<ScanReport> {
  const sizes = await Promise.all(
    paths.map((path) =>
      stat(path).then(
        (info) => info.size,
        () => 0,
      ),
    ),
  );
  const total = sizes.reduce((sum, size) => sum + size, 0);
  const worthIt = Math.floor(total / (options.minShareBytes ?? MIN_SHARE_BYTES));
  const processes = Math.max(1, Math.min(options.processes ?? defaultScanProcesses(), worthIt));
  // No file still gets one process: it says which needles are too short to search.
  const shares = paths.length > 0 ? planShares(paths, sizes, processes) : [[]];
  const encoded = needles.map((n) => ({
    id: n.id,
    bytes: Buffer.from(n.bytes.buffer, n.bytes.byteOffset, n.bytes.byteLength).toString('base64'),
  }));
  // One process failing fails the scan; the others are stopped rather than left reading.
  const abort = new AbortController();
  const replies = await Promise.all(
    shares.map((segments) =>
      runScanProcess(JSON.stringify({ segments, chunkBytes: CHUNK_BYTES, needles: encoded }), abort.signal).catch((error: unknown) => {
        abort.abort();
        throw error;
      }),
    ),
  );
  return mergeReplies(paths, shares, replies);
}

/**
 * Cuts the files, in order, into `processes` shares of about equal bytes. A
 * file that crosses a share's end is split there; each file's last segment
 * runs to its end, so bytes written after the sizes were read are scanned too.
 */
export function planShares(paths: string[], sizes: number[], processes: number): Segment[][] {
  const total = sizes.reduce((sum, size) => sum + size, 0);
  const shareBytes = Math.max(1, Math.ceil(total / processes));
  const shares: Segment[][] = [[]];
  let room = shareBytes;
  paths.forEach((path, i) => {
    let start = 0;
    while (sizes[i] - start > room && shares.length < processes) {
      if (room > 0) shares[shares.length - 1].push({ path, start, end: start + room });
      start += room;
      shares.push([]);
      room = shareBytes;
    }
    shares[shares.length - 1].push({ path, start, end: null });
    room -= sizes[i] - start;
  });
  return shares.filter((segments) => segments.length > 0);
}

/** What one scan process answers (see byte-scan-process.mjs). */
interface ScanReply {
  /** Bytes scanned per segment, null where the file could not be opened. */
  scanned: (number | null)[];
  /** A needle's first occurrence per segment; `slot` tells its byte forms apart. */
  findings: { segment: number; slot: number; needleId: string; offset: number }[];
  tooShort: string[];
}

/** One report from the processes' replies: a file counts when every segment of it was read. */
function mergeReplies(paths: string[], shares: Segment[][], replies: ScanReply[]): ScanReport {
  const read = new Map<string, { opened: boolean; bytes: number }>();
  const first = new Map<string, ScanFinding>(); // by path and slot
  replies.forEach((reply, share) => {
    shares[share].forEach(({ path }, segment) => {
      const scanned = reply.scanned[segment];
      const file = read.get(path) ?? { opened: true, bytes: 0 };
      read.set(path, { opened: file.opened && scanned !== null, bytes: file.bytes + (scanned ?? 0) });
    });
    for (const { segment, slot, needleId, offset } of reply.findings) {
      const path = shares[share][segment].path;
      const key = `${slot}\u0000${path}`;
      const seen = first.get(key);
      if (!seen || offset < seen.offset) first.set(key, { needleId, path, offset });
    }
  });
  const scanned = [...new Set(paths)].filter((path) => read.get(path)?.opened);
  const order = new Map(paths.map((path, i) => [path, i]));
  return {
    files: scanned.length,
    bytes: scanned.reduce((sum, path) => sum + (read.get(path)?.bytes ?? 0), 0),
    paths: scanned,
    // In file order, then by offset within a file.
    findings: [...first.values()].sort((a, b) => order.get(a.path)! - order.get(b.path)! || a.offset - b.offset),
    tooShort: replies[0]?.tooShort ?? [],
  };
}

async function runScanProcess(request: string, signal: AbortSignal): Promise<ScanReply> {
  // Empty env and no execArgv: the script needs no loader, and NODE_OPTIONS from a test runner or tsx must not leak in.
  const child = spawn(process.execPath, [SCAN_PROCESS], { stdio: ['pipe', 'pipe', 'pipe'], env: {}, timeout: SCAN_TIMEOUT_MS, signal });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  // A child that dies early closes stdin; the exit status below says why, not the EPIPE.
  child.stdin.on('error', () => undefined);
  child.stdin.end(request);
  const { code, signal: killedBy } = await exit;
  if (code !== 0) {
    // The first line only: a stack trace from the scanner names paths and code, never needle bytes.
    const reason =
      Buffer.concat(err)
        .toString('utf8')
        .split('\n')
        .find((line) => line.trim()) ?? '';
    throw new Error(`byte scan process failed (exit code ${code}, signal ${killedBy})${reason ? `: ${reason.slice(0, 200)}` : ''}`);
  }
  return JSON.parse(Buffer.concat(out).toString('utf8')) as ScanReply;
}

const SCAN_PROCESS = fileURLToPath(new URL('./byte-scan-process.mjs', import.meta.url));

async function ifExists<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}
