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
 *   { segments: { path, start, end }[], needles: { id, bytes (base64) }[], chunkBytes }
 * where a segment is the part of a file from byte `start` up to `end` (null:
 * to the end of the file, however long it has grown); an occurrence belongs
 * to the segment it starts in, so a segment reads on past `end` by the
 * longest needle's length. One JSON reply on stdout,
 *   { scanned: (number | null)[], findings: { segment, slot, needleId, offset }[], tooShort }
 * with the bytes scanned of each segment (null: the file could not be
 * opened) and each needle's (its slot: the same id may have several byte
 * forms) first occurrence per segment. byte-scan.ts merges the replies of
 * several such processes into one ScanReport. Nothing else is written: the
 * needles are erased content and must not reach a log.
 */
import { open } from 'node:fs/promises';

/** The index works on 8-byte windows (two int32 words); shorter needles are not searched. */
const ANCHOR_BYTES = 8;
/** How far into a needle to look for its anchors; bounds indexing cost for long plaintexts. */
const ANCHOR_SEARCH = 1024;
/**
 * The scan looks at every STRIDE-th position of a file only, and indexes
 * STRIDE consecutive windows of each needle, so that one of them starts at a
 * looked-at position whatever the needle's offset. The stride is the largest
 * that every needle allows (its length less 7, and the run of varied windows
 * it has), at most this: 16 windows per needle keep the index small.
 */
const MAX_STRIDE = 16;
/** A window with fewer distinct bytes (zero runs, padding) would match too often in SQLite pages. */
const VARIED = 4;

/** Hash of the 8 bytes `high`..`low` read as two big-endian int32 words. */
const anchorHash = (high, low) => Math.imul(high ^ Math.imul(low, 0x85ebca6b), 0x9e3779b1);
/** Map keys kept within small-integer range, which V8 hashes fastest. */
const mapKey = (hash) => hash >>> 2;

/** Distinct bytes in each 8-byte window of `bytes` starting within ANCHOR_SEARCH + MAX_STRIDE. */
function varieties(bytes) {
  const seenAt = new Int32Array(256).fill(-1);
  const windows = Math.min(bytes.length - ANCHOR_BYTES, ANCHOR_SEARCH + MAX_STRIDE) + 1;
  const distinct = new Uint8Array(windows);
  for (let start = 0; start < windows; start++) {
    for (let j = start; j < start + ANCHOR_BYTES; j++) {
      if (seenAt[bytes[j]] !== start) {
        seenAt[bytes[j]] = start;
        distinct[start] += 1;
      }
    }
  }
  return distinct;
}

/** The stride a needle allows: its longest run of varied windows (at least 1), at most MAX_STRIDE. */
function strideAllowed(distinct) {
  let longest = 0;
  let run = 0;
  for (const count of distinct) {
    run = count >= VARIED ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return Math.max(1, Math.min(longest, MAX_STRIDE));
}

/*
 * A needle is indexed by its most varied run of `stride` windows (the one
 * whose least varied window is the most varied), not by its first bytes.
 * Vectors of sparse embeddings often start with zero floats and SQLite files
 * are full of zeroed pages, so a first-bytes index can match at nearly every
 * position and turn the pass into a full compare per byte.
 */
function chooseAnchor(distinct, stride) {
  let best = 0;
  let bestLeast = -1;
  for (let start = 0; start + stride <= distinct.length; start++) {
    let least = ANCHOR_BYTES;
    for (let j = start; j < start + stride; j++) least = Math.min(least, distinct[j]);
    if (least > bestLeast) {
      best = start;
      bestLeast = least;
      if (least === ANCHOR_BYTES) break;
    }
  }
  return best;
}

function indexNeedles(needles) {
  const tooShort = new Set();
  const seen = new Set();
  const searched = [];
  for (const needle of needles) {
    if (needle.bytes.length < ANCHOR_BYTES) {
      tooShort.add(needle.id);
      continue;
    }
    // The same needle given twice would otherwise be reported twice per file.
    const key = `${needle.id}\u0000${needle.bytes.toString('latin1')}`;
    if (seen.has(key)) continue;
    seen.add(key);
    searched.push({ ...needle, distinct: varieties(needle.bytes) });
  }
  const stride = searched.reduce((least, needle) => Math.min(least, strideAllowed(needle.distinct)), MAX_STRIDE);

  // About 64 filter bits per indexed window (2^20 to 2^24): few false positives, so the Map is touched on few positions.
  const filterBits = Math.min(24, Math.max(20, Math.ceil(Math.log2(Math.max(1, searched.length * stride) * 64))));
  const filter = new Uint32Array((1 << filterBits) / 32);
  const byAnchor = new Map();
  const ids = []; // by slot
  let longest = 0;
  for (const [slot, { id, bytes, distinct }] of searched.entries()) {
    const anchor = chooseAnchor(distinct, stride);
    for (let offset = anchor; offset < anchor + stride; offset++) {
      const hash = anchorHash(bytes.readInt32BE(offset), bytes.readInt32BE(offset + 4));
      const bit = hash >>> (32 - filterBits);
      filter[bit >>> 5] |= 1 << (bit & 31);
      let list = byAnchor.get(mapKey(hash));
      if (!list) byAnchor.set(mapKey(hash), (list = []));
      list.push({ bytes, offset, slot });
    }
    ids.push(id);
    longest = Math.max(longest, bytes.length);
  }
  return {
    index: { filter, filterShift: 32 - filterBits, byAnchor, ids, count: searched.length, stride, overlap: Math.max(0, longest - 1) },
    tooShort: [...tooShort],
  };
}

/**
 * Returns the number of bytes of the segment scanned, or undefined if the
 * file could not be opened.
 */
async function scanSegment(segment, index, buffer, chunkBytes, report, segmentNo) {
  const handle = await open(segment.path, 'r').catch(() => undefined);
  if (!handle) return undefined;
  const { start } = segment;
  const end = segment.end ?? Infinity;
  try {
    // Each needle's first occurrence in the segment (a file offset), -1 while none.
    const first = new Float64Array(index.count).fill(-1);
    let kept = 0; // bytes carried over at the start of `buffer` from the previous chunk
    let total = start; // file offset of the end of the bytes in `buffer`
    // Past `end`, read only as far as an occurrence starting before it can reach.
    while (total < end + index.overlap) {
      const want = Math.min(chunkBytes, end + index.overlap - total);
      const { bytesRead } = await handle.read(buffer, kept, want, total);
      // The kept bytes were searched with the previous chunk; nothing new at the end of the file.
      if (bytesRead === 0) break;
      const filled = kept + bytesRead;
      total += bytesRead;
      if (filled >= ANCHOR_BYTES && index.count > 0) searchChunk(buffer, filled, total - filled, end, index, first);
      // Keep the last `overlap` bytes, so every occurrence lies whole inside some buffer.
      kept = Math.min(index.overlap, filled);
      buffer.copy(buffer, 0, filled - kept, filled);
    }
    first.forEach((offset, slot) => {
      if (offset >= 0) report.findings.push({ segment: segmentNo, slot, needleId: index.ids[slot], offset });
    });
    return Math.min(total, end) - start;
  } finally {
    await handle.close();
  }
}

/**
 * Looks at every `stride`-th position of the buffer. An occurrence lying
 * whole in the buffer has one of its needle's indexed windows at such a
 * position, so it is found; one of a needle met again (in the overlap, or
 * repeated) is compared only if it starts before the first one found, which
 * can happen within a stride. Records first occurrences starting before `end`.
 */
function searchChunk(buffer, filled, fileOffset, end, index, first) {
  const { filter, filterShift, byAnchor, stride } = index;
  const last = filled - ANCHOR_BYTES;
  for (let i = 0; i <= last; i += stride) {
    const high = (buffer[i] << 24) | (buffer[i + 1] << 16) | (buffer[i + 2] << 8) | buffer[i + 3];
    const low = (buffer[i + 4] << 24) | (buffer[i + 5] << 16) | (buffer[i + 6] << 8) | buffer[i + 7];
    const hash = anchorHash(high, low);
    const bit = hash >>> filterShift;
    if ((filter[bit >>> 5] & (1 << (bit & 31))) === 0) continue;
    const candidates = byAnchor.get(mapKey(hash));
    if (!candidates) continue;
    for (const { bytes, offset, slot } of candidates) {
      const start = i - offset;
      const at = fileOffset + start;
      if (start < 0 || start + bytes.length > filled || at >= end) continue;
      if (first[slot] >= 0 && at >= first[slot]) continue;
      if (buffer.compare(bytes, 0, bytes.length, start, start + bytes.length) !== 0) continue;
      first[slot] = at;
    }
  }
}

async function scanSegments(segments, needles, chunkBytes) {
  const { index, tooShort } = indexNeedles(needles);
  const report = { scanned: [], findings: [], tooShort };
  const buffer = Buffer.allocUnsafe(index.overlap + chunkBytes);
  for (const [segmentNo, segment] of segments.entries()) {
    const scanned = await scanSegment(segment, index, buffer, chunkBytes, report, segmentNo);
    report.scanned.push(scanned ?? null);
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
const report = await scanSegments(request.segments, needles, request.chunkBytes);
process.stdout.write(JSON.stringify(report));
