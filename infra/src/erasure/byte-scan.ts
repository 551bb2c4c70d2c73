import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** A byte sequence that must not remain on disk; `id` is the record it belongs to. */
export interface Needle {
  id: string;
  bytes: Uint8Array;
}

export interface ScanFinding {
  needleId: string;
  path: string;
  /** Byte offset of the first occurrence of the needle in the file. */
  offset: number;
}

export interface ScanReport {
  /** Files scanned to the end; files that vanished or could not be opened are not counted. */
  files: number;
  /** Total bytes scanned. */
  bytes: number;
  /** The paths scanned, as given; a listed path missing here was skipped. */
  paths: string[];
  findings: ScanFinding[];
  /** Ids of needles too short to search for without drowning in false positives. */
  tooShort: string[];
}

/**
 * Shorter needles are not searched: below 8 bytes a random match in a few MB
 * of pages and vectors is likely, and the index works on 8-byte windows.
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

/**
 * Searches every file for every needle in one pass per file, reading it in
 * chunks. Reports each (needle, file) pair at most once, at its first offset.
 * Files that vanish or cannot be opened after listing are skipped (SQLite
 * -wal and -shm files come and go); an opened file is read to its end.
 */
export async function scanFiles(paths: string[], needles: Needle[]): Promise<ScanReport> {
  const { index, tooShort } = indexNeedles(needles);
  const report: ScanReport = { files: 0, bytes: 0, paths: [], findings: [], tooShort };
  const buffer = Buffer.allocUnsafe(index.overlap + CHUNK_BYTES);

  for (const path of paths) {
    const scanned = await scanFile(path, index, buffer, report.findings);
    if (scanned === undefined) continue;
    report.files += 1;
    report.bytes += scanned;
    report.paths.push(path);
  }
  return report;
}

interface IndexedNeedle {
  id: string;
  bytes: Buffer;
  /** Offset inside the needle of the 8-byte window it is indexed by. */
  anchor: number;
  /** Position in the index, used to report a needle once per file. */
  slot: number;
}

interface NeedleIndex {
  /** Bit set over a hash of each anchor: rejects almost every position with one typed-array read. */
  filter: Uint32Array;
  /** Anchor hash -> needles whose anchor has that hash; a full compare settles collisions. */
  byAnchor: Map<number, IndexedNeedle[]>;
  count: number;
  /** Longest needle minus one: how many bytes a match can reach past the end of a chunk. */
  overlap: number;
}

/*
 * 2^20 bits (128 KiB, fits in L2) keep false positives near 0.2% even with
 * thousands of needles, so the Map is touched on few positions.
 */
const FILTER_BITS = 20;
const ANCHOR_BYTES = MIN_NEEDLE_BYTES;
/** How far into a needle to look for its anchor; bounds indexing cost for long plaintexts. */
const ANCHOR_SEARCH = 1024;

/** Hash of the 8 bytes `high`..`low` read as two big-endian int32 words. */
const anchorHash = (high: number, low: number) => Math.imul(high ^ Math.imul(low, 0x85ebca6b), 0x9e3779b1);
const filterSlot = (hash: number) => hash >>> (32 - FILTER_BITS);
/** Map keys kept within small-integer range, which V8 hashes fastest. */
const mapKey = (hash: number) => hash >>> 2;

/*
 * A needle is indexed by its most varied 8-byte window rather than its first
 * 8 bytes. Vectors of sparse embeddings often start with zero floats and
 * SQLite files are full of zeroed pages, so a first-bytes index can match at
 * nearly every position and turn the pass into a full compare per byte.
 */
function chooseAnchor(bytes: Buffer): number {
  const seenAt = new Int32Array(256).fill(-1);
  const lastStart = Math.min(bytes.length - ANCHOR_BYTES, ANCHOR_SEARCH);
  let best = 0;
  let bestDistinct = 0;
  for (let start = 0; start <= lastStart; start++) {
    let distinct = 0;
    for (let j = start; j < start + ANCHOR_BYTES; j++) {
      if (seenAt[bytes[j]] !== start) {
        seenAt[bytes[j]] = start;
        distinct += 1;
      }
    }
    if (distinct > bestDistinct) {
      best = start;
      bestDistinct = distinct;
      if (distinct === ANCHOR_BYTES) break;
    }
  }
  return best;
}

function indexNeedles(needles: Needle[]): { index: NeedleIndex; tooShort: string[] } {
  const filter = new Uint32Array((1 << FILTER_BITS) / 32);
  const byAnchor = new Map<number, IndexedNeedle[]>();
  const tooShort = new Set<string>();
  const seen = new Set<string>();
  let count = 0;
  let longest = 0;

  for (const needle of needles) {
    const bytes = Buffer.from(needle.bytes.buffer, needle.bytes.byteOffset, needle.bytes.byteLength);
    if (bytes.length < MIN_NEEDLE_BYTES) {
      tooShort.add(needle.id);
      continue;
    }
    // The same needle given twice would otherwise be reported twice per file.
    const key = `${needle.id}\u0000${bytes.toString('latin1')}`;
    if (seen.has(key)) continue;
    seen.add(key);

    const anchor = chooseAnchor(bytes);
    const hash = anchorHash(bytes.readInt32BE(anchor), bytes.readInt32BE(anchor + 4));
    const slot = filterSlot(hash);
    filter[slot >>> 5] |= 1 << (slot & 31);
    let list = byAnchor.get(mapKey(hash));
    if (!list) byAnchor.set(mapKey(hash), (list = []));
    list.push({ id: needle.id, bytes, anchor, slot: count++ });
    longest = Math.max(longest, bytes.length);
  }
  return { index: { filter, byAnchor, count, overlap: Math.max(0, longest - 1) }, tooShort: [...tooShort] };
}

/** Returns the number of bytes scanned, or undefined if the file could not be opened. */
async function scanFile(path: string, index: NeedleIndex, buffer: Buffer, findings: ScanFinding[]): Promise<number | undefined> {
  const handle = await open(path, 'r').catch(() => undefined);
  if (!handle) return undefined;
  const inFile: ScanFinding[] = [];
  try {
    const found = new Uint8Array(index.count);
    let kept = 0; // bytes carried over at the start of `buffer` from the previous chunk
    let total = 0; // file offset of the end of the bytes in `buffer`
    for (;;) {
      const { bytesRead } = await handle.read(buffer, kept, CHUNK_BYTES, null);
      // The kept bytes were searched with the previous chunk; nothing new at the end of the file.
      if (bytesRead === 0) break;
      const end = kept + bytesRead;
      total += bytesRead;
      if (end >= MIN_NEEDLE_BYTES && index.count > 0) {
        searchChunk(buffer, end, total - end, path, index, found, inFile);
      }
      /*
       * Keep the last `overlap` bytes, so every occurrence lies whole inside
       * some buffer. Occurrences of one needle are met in file order (its
       * anchor sits at a fixed offset), so the first one recorded is the
       * first in the file; `found` drops the ones seen again in the overlap.
       */
      kept = Math.min(index.overlap, end);
      buffer.copy(buffer, 0, end - kept, end);
    }
    // Needles are met in anchor order, not start order; report in file order.
    inFile.sort((a, b) => a.offset - b.offset);
    findings.push(...inFile);
    return total;
  } finally {
    await handle.close();
  }
}

function searchChunk(
  buffer: Buffer,
  end: number,
  fileOffset: number,
  path: string,
  index: NeedleIndex,
  found: Uint8Array,
  findings: ScanFinding[],
): void {
  const { filter, byAnchor } = index;
  const last = end - ANCHOR_BYTES;
  // Rolling big-endian words of buffer[i..i+3] and buffer[i+4..i+7], as readInt32BE gives them in indexNeedles.
  let high = (buffer[0] << 16) | (buffer[1] << 8) | buffer[2];
  let low = (buffer[3] << 24) | (buffer[4] << 16) | (buffer[5] << 8) | buffer[6];
  for (let i = 0; i <= last; i++) {
    high = (high << 8) | (low >>> 24);
    low = (low << 8) | buffer[i + 7];
    const hash = anchorHash(high, low);
    const slot = filterSlot(hash);
    if ((filter[slot >>> 5] & (1 << (slot & 31))) === 0) continue;
    const candidates = byAnchor.get(mapKey(hash));
    if (!candidates) continue;
    for (const needle of candidates) {
      const start = i - needle.anchor;
      const length = needle.bytes.length;
      if (found[needle.slot] || start < 0 || start + length > end) continue;
      if (buffer.compare(needle.bytes, 0, length, start, start + length) !== 0) continue;
      found[needle.slot] = 1;
      findings.push({ needleId: needle.id, path, offset: fileOffset + start });
    }
  }
}

async function ifExists<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}
