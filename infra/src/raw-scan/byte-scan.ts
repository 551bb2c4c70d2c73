import { spawn } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

import type { Needle, ScanReport } from '@elma/domain';

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
 * Searches every file for every needle in one pass per file, reading it in
 * chunks. Reports each (needle, file) pair at most once, at its first offset.
 * Files that vanish or cannot be opened after listing are skipped (SQLite
 * -wal and -shm files come and go); an opened file is read to its end.
 *
 * The files are read by a child process (byte-scan-process.mjs), never by
 * this one: the scanned files include the live SQLite databases this process
 * holds, and closing any descriptor of such a file would release every POSIX
 * lock the process holds on it, letting another process treat the live
 * database as abandoned.
 */
export async function scanFiles(paths: string[], needles: Needle[]): Promise<ScanReport> {
  const request = JSON.stringify({
    paths,
    chunkBytes: CHUNK_BYTES,
    needles: needles.map((n) => ({
      id: n.id,
      bytes: Buffer.from(n.bytes.buffer, n.bytes.byteOffset, n.bytes.byteLength).toString('base64'),
    })),
  });
  // Empty env and no execArgv: the script needs no loader, and NODE_OPTIONS from a test runner or tsx must not leak in.
  const child = spawn(process.execPath, [SCAN_PROCESS], { stdio: ['pipe', 'pipe', 'pipe'], env: {}, timeout: SCAN_TIMEOUT_MS });
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
  const { code, signal } = await exit;
  if (code !== 0) {
    // The first line only: a stack trace from the scanner names paths and code, never needle bytes.
    const reason =
      Buffer.concat(err)
        .toString('utf8')
        .split('\n')
        .find((line) => line.trim()) ?? '';
    throw new Error(`byte scan process failed (exit code ${code}, signal ${signal})${reason ? `: ${reason.slice(0, 200)}` : ''}`);
  }
  return JSON.parse(Buffer.concat(out).toString('utf8')) as ScanReport;
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
