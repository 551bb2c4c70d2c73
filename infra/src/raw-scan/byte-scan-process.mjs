/*
 * The erasure byte scan, run as a child process of the ELMA process that asks
 * for it. POSIX advisory locks belong to a process and are all released when
 * any descriptor of the file is closed; SQLite's locks on the live event log,
 * key vault and index are such locks, so the process that holds them must
 * never open and close those files itself. This process holds no lock, so
 * opening and closing them here leaves the parent's locks in place.
 *
 * Plain JavaScript with Node built-ins only: it is spawned with
 * `process.execPath` and must run alike under tsx (`npm start`), vitest and
 * the production image.
 *
 * Protocol: one JSON request on stdin,
 *   { paths: string[], needles: { id, bytes (base64) }[], chunkBytes }
 * one JSON report on stdout, { files, bytes, paths, findings, tooShort }
 * (see ScanReport in byte-scan.ts). Nothing else is written: the needles are
 * erased content and must not reach a log.
 */
import { open } from 'node:fs/promises';

/*
 * 2^20 bits (128 KiB, fits in L2) keep false positives near 0.2% even with
 * thousands of needles, so the Map is touched on few positions.
 */
const FILTER_BITS = 20;
/** The index works on 8-byte windows (two int32 words); shorter needles are not searched. */
const ANCHOR_BYTES = 8;
/** How far into a needle to look for its anchor; bounds indexing cost for long plaintexts. */
const ANCHOR_SEARCH = 1024;

/** Hash of the 8 bytes `high`..`low` read as two big-endian int32 words. */
const anchorHash = (high, low) => Math.imul(high ^ Math.imul(low, 0x85ebca6b), 0x9e3779b1);
const filterSlot = (hash) => hash >>> (32 - FILTER_BITS);
/** Map keys kept within small-integer range, which V8 hashes fastest. */
const mapKey = (hash) => hash >>> 2;

/*
 * A needle is indexed by its most varied 8-byte window rather than its first
 * 8 bytes. Vectors of sparse embeddings often start with zero floats and
 * SQLite files are full of zeroed pages, so a first-bytes index can match at
 * nearly every position and turn the pass into a full compare per byte.
 */
function chooseAnchor(bytes) {
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

function indexNeedles(needles) {
  const filter = new Uint32Array((1 << FILTER_BITS) / 32);
  const byAnchor = new Map();
  const tooShort = new Set();
  const seen = new Set();
  let count = 0;
  let longest = 0;

  for (const needle of needles) {
    const bytes = needle.bytes;
    if (bytes.length < ANCHOR_BYTES) {
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
async function scanFile(path, index, buffer, chunkBytes, findings) {
  const handle = await open(path, 'r').catch(() => undefined);
  if (!handle) return undefined;
  const inFile = [];
  try {
    const found = new Uint8Array(index.count);
    let kept = 0; // bytes carried over at the start of `buffer` from the previous chunk
    let total = 0; // file offset of the end of the bytes in `buffer`
    for (;;) {
      const { bytesRead } = await handle.read(buffer, kept, chunkBytes, null);
      // The kept bytes were searched with the previous chunk; nothing new at the end of the file.
      if (bytesRead === 0) break;
      const end = kept + bytesRead;
      total += bytesRead;
      if (end >= ANCHOR_BYTES && index.count > 0) {
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

function searchChunk(buffer, end, fileOffset, path, index, found, findings) {
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

async function scanFiles(paths, needles, chunkBytes) {
  const { index, tooShort } = indexNeedles(needles);
  const report = { files: 0, bytes: 0, paths: [], findings: [], tooShort };
  const buffer = Buffer.allocUnsafe(index.overlap + chunkBytes);
  for (const path of paths) {
    const scanned = await scanFile(path, index, buffer, chunkBytes, report.findings);
    if (scanned === undefined) continue;
    report.files += 1;
    report.bytes += scanned;
    report.paths.push(path);
  }
  return report;
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

const request = JSON.parse(await readStdin());
const needles = request.needles.map((n) => ({ id: n.id, bytes: Buffer.from(n.bytes, 'base64') }));
const report = await scanFiles(request.paths, needles, request.chunkBytes);
process.stdout.write(JSON.stringify(report));
