import { basename, relative } from 'node:path';
import {
  KeyShredded,
  TenantDestroyed,
  type KeyVault,
  type MemoryIndex,
  type Needle,
  type RawStoreScan,
  type Verification,
} from '@elma/domain';
import type { WorksetRecord } from './erasure-store';

/** A kNN hit at least this similar to an erased record's own vector counts as the record still being there. */
export const KNN_PROBE_COSINE = 0.99;

/** Erased records probed per index call: one call per batch, not three per record. */
const PROBE_BATCH = 250;

/**
 * Step 11 of the erasure: proves, per erased record, that it cannot be found
 * or read any more (docs/architecture.md#erasure). Probes, through `MemoryIndex.leftovers` a batch at a
 * time: a row under its id; full-text entries holding its words; vectors near its own (those of a removed
 * row too, which no search would return); decryption of its events (the
 * data keys must be shredded); and a byte scan of every file under the scan
 * roots (event log, index, key vault, their WAL files, the Temporal
 * database) for its plaintext and its raw vector bytes.
 */
export class ErasureVerifier {
  constructor(private readonly deps: { index: MemoryIndex; vault: KeyVault; rawScan: RawStoreScan; scanRoots: string[] }) {}

  async verify(tenant: string, records: WorksetRecord[], keyIds: string[], round: number): Promise<Verification> {
    // The byte scan runs in a child process: it reads the files while this process probes the index.
    const scanning = this.scan(tenant, records);
    // Settled at once, so a probe that throws first does not leave the scan's rejection unhandled.
    scanning.catch(() => undefined);
    const probe = () => ({ checked: records.length, failed: 0, skipped: 0 });
    const getById = probe();
    const bm25 = probe();
    const knn = probe();
    // Texts a surviving record holds verbatim: their bytes legitimately remain (see scan).
    const shared = new Set<string>();
    for (let i = 0; i < records.length; i += PROBE_BATCH) {
      const batch = records.slice(i, i + PROBE_BATCH);
      const left = await this.deps.index.leftovers(
        tenant,
        batch.map((r) => ({ id: r.id, text: r.text, ...(r.vector ? { vector: vectorOf(r) } : {}) })),
        { minCosine: KNN_PROBE_COSINE },
      );
      const [rows, terms, vectors, sharedText] = [left.rows, left.terms, left.vectors, left.sharedText].map((ids) => new Set(ids));
      for (const record of batch) {
        if (rows.has(record.id)) getById.failed++;
        // A record without words (or erased before it was embedded) left nothing to probe that route with.
        if (record.terms.length === 0) bm25.skipped++;
        else if (terms.has(record.id)) bm25.failed++;
        if (!record.vector) knn.skipped++;
        else if (vectors.has(record.id)) knn.failed++;
        if (sharedText.has(record.id)) shared.add(record.text);
      }
    }

    const decrypt = { checked: keyIds.length, failed: 0, skipped: 0 };
    for (const keyId of keyIds) {
      try {
        await this.deps.vault.dataKeys(tenant, [keyId], { create: false });
        decrypt.failed++;
      } catch (error) {
        if (!(error instanceof KeyShredded || error instanceof TenantDestroyed)) decrypt.failed++;
      }
    }

    const byteScan = discountShared(await scanning, records, shared);
    const passed = [getById, bm25, knn, decrypt, byteScan].every((p) => p.failed === 0);
    return { passed, getById, bm25, knn, decrypt, byteScan, rounds: round };
  }

  /**
   * Needles: the UTF-8 text (and its JSON-escaped form, as a JSON column
   * would hold it) and the float32 vector bytes, for every record (`discountShared`
   * then sets aside the content a surviving record holds). Other tenants' index files are not scanned (their
   * identical text would be theirs, not this record).
   */
  private async scan(tenant: string, records: WorksetRecord[]): Promise<ScanOutcome> {
    const needles: Needle[] = [];
    for (const record of records) {
      const utf8 = Buffer.from(record.text, 'utf8');
      needles.push({ id: record.id, bytes: utf8 });
      const escaped = Buffer.from(JSON.stringify(record.text).slice(1, -1), 'utf8');
      if (!escaped.equals(utf8)) needles.push({ id: record.id, bytes: escaped });
      // The vector as the index files hold it (quantised in SQLite rows), or its float32 bytes.
      if (record.vector) {
        const forms = this.deps.index.storedVectorForms?.(vectorOf(record)) ?? [Buffer.from(record.vector, 'base64')];
        for (const bytes of forms) needles.push({ id: record.id, bytes });
      }
    }
    const otherTenantIndex = (path: string) => {
      const name = basename(path);
      return name.startsWith('tenant-') && !name.startsWith(`tenant-${tenant}.`);
    };
    const paths = await this.deps.rawScan.listFiles(this.deps.scanRoots, { exclude: otherTenantIndex });
    const report = await this.deps.rawScan.scanFiles(paths, needles);
    const root = this.deps.scanRoots[0] ?? '';
    return {
      foundIds: new Set(report.findings.map((f) => f.needleId)),
      files: report.files,
      bytes: report.bytes,
      paths: report.paths.map((p) => (p.startsWith(root) ? relative(root, p) : p)),
    };
  }
}

/** What the byte scan found, before the content surviving records hold is set aside. */
interface ScanOutcome {
  foundIds: Set<string>;
  files: number;
  bytes: number;
  paths: string[];
}

/**
 * Content that a surviving record of the tenant holds verbatim (the BM25
 * probe finds it) is skipped, not failed: its bytes legitimately remain. Such
 * a record's findings (text and vector alike) are set aside, as if it had not
 * been searched for.
 */
function discountShared({ foundIds, ...scanned }: ScanOutcome, records: WorksetRecord[], surviving: Set<string>) {
  let skipped = 0;
  let failed = 0;
  for (const record of records) {
    if (surviving.has(record.text)) skipped++;
    else if (foundIds.has(record.id)) failed++;
  }
  // A text too short to scan for still has its vector scanned; it counts as skipped only for the text.
  return { checked: records.length, failed, skipped, ...scanned };
}

function vectorOf(record: WorksetRecord): Float32Array {
  const bytes = Buffer.from(record.vector, 'base64');
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}
