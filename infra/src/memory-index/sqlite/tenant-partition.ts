import { closeSync, existsSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import {
  CONVERSATION_GAP_MS,
  FORMAT_VERSIONS,
  analysisCodeAt,
  FormatTooNew,
  MemoryRecord,
  SENSITIVITY_RANK,
  documentAnalysisCode,
  documentTerms,
  queryTerms,
  smoothByNeighbours,
  turnConversations,
  type Adjacent,
  type EmbeddedVector,
  type ErasedProbe,
  type IndexFilter,
  type IndexedMemory,
  type Leftovers,
  type LineageEntry,
  type ListQuery,
  type PendingEmbedding,
  type MemoryKind,
  type TextAnalysis,
  type ScriptGroup,
  scriptGroupOf,
  scopeGroups,
  scopeKeys,
  type IndexScope,
  type StoredUsage,
} from '@elma/domain';
import type { FilterSql } from './filter-sql';
import { millis } from './filter-sql';
import { PolicyRows } from './policy-rows';
import { TermFrequencies } from './term-frequencies';
import {
  factKeyOf,
  ftsStoresContent,
  lineageInputs,
  keysOfScopeSet,
  lineageSet,
  scopeSet,
  migrateTenantSchema,
  purposeSet,
  TENANT_FTS_SCHEMA,
  TENANT_SCHEMA,
} from './schema';
import { graphVectorBytes, SCALAR_BYTES, VectorGraph, type VectorGraphOptions } from './vector-graph';
import { cosine, dequantise, fromBlob, norm, quantise } from './vectors';
import { scanFiles } from '../../raw-scan/byte-scan';
import { countTokens } from '@elma/shared';

export interface PartitionFiles {
  db: string;
  graph: string;
}

export interface PartitionOptions {
  /** The tenant whose partition this is: its records' `tenant`, which slim rows leave out of their JSON. */
  tenant: string;
  dimensions: number;
  /** The configured embedder model: only its vectors enter the graph and answer the dense route. */
  model: string;
  graph?: VectorGraphOptions;
  /** Save the graph file after this many vectors were added since the last save. */
  persistEveryRows: number;
  /** How the BM25 route cuts documents and queries; a partition indexed otherwise is re-derived on open. */
  text: TextAnalysis;
  /** The partition and vector formats this build writes (`FORMAT_VERSIONS`; tests simulate another build). */
  formats?: { indexRows: number; vectors: number; tokenisation: number };
}

export interface StoredRow {
  rowid: number;
  record: MemoryRecord;
  /** Absent while the row waits for its vector. */
  vector?: Float32Array;
  /** The text's o200k count; absent until the embedding stage sets the row's vector (or on a past version). */
  tokens?: number;
}

/**
 * The columns a record is read from (`recordOf`): its JSON and the fields
 * that rows of format 2 keep only in columns of their own.
 */
const RECORD_COLUMNS = 'record, id, version, kind, status, subject, session';
const JOINED_RECORD_COLUMNS = RECORD_COLUMNS.split(', ')
  .map((column) => `m.${column}`)
  .join(', ');

interface RecordRow {
  record: string;
  id: string;
  version: number;
  kind: MemoryRecord['kind'];
  status: MemoryRecord['status'];
  subject: string;
  session: string | null;
}

/** The rows format from which a row's JSON leaves out what its columns hold (see `rowJson`). */
const SLIM_ROWS_FORMAT = 2;

/** What a lineage entry is read from: the JSON is taken apart by SQLite, not parsed whole. */
const LINEAGE_COLUMNS = `rowid, id, kind, owner, project, recorded_at, expires_at, vector_model, subject,
  json_extract(record, '$.provenance.rule') AS rule,
  json_extract(record, '$.provenance.sourceEventIds') AS sources,
  json_extract(record, '$.provenance.parentIds') AS parents`;

/** The vectors format of partitions from before it was recorded (float32 BLOBs). */
const LEGACY_VECTORS_FORMAT = 1;

/** The vectors format of quantised rows (int8 and a scale, see `quantise`), which format 1 rows are converted to. */
const QUANTISED_VECTORS_FORMAT = 2;

/** The ef_construction of graph files saved before it was recorded (usearch's default then). */
const LEGACY_EXPANSION_ADD = 16;

/**
 * Dense-route candidates are searched at two depths, the first within these
 * bounds (see OVERSAMPLING_MARGIN), the second at least the upper one; past
 * it the filtered rows are scanned exactly.
 */
const GRAPH_DEPTHS = [64, 512] as const;

/**
 * The dense route asks the graph for `depth * OVERSAMPLING_MARGIN / share`
 * candidates, where `share` is a moving average (weight SHARE_SMOOTHING) of
 * the share of graph candidates the filters admitted, at least
 * MIN_ADMITTED_SHARE. A share overestimated for one caller's narrower filter
 * costs that search a second, deeper one (GRAPH_DEPTHS), never a result.
 */
const OVERSAMPLING_MARGIN = 1.2;
const MIN_ADMITTED_SHARE = 0.1;
const SHARE_SMOOTHING = 0.2;

/** Postings BM25 may score per query (see searchText). */
const BM25_BUDGET = 500;

/**
 * A scoped BM25 search whose survivors exceed this share of the match's rows
 * has FTS5 score the whole match (about 2.4 µs a row) rather than each
 * survivor scored from its record (about 40 µs).
 */
const SCOPED_TEXT_SHARE = 1 / 16;

/**
 * A scope of at most this many rows (`scopedRows`) is searched on the dense
 * route by comparing each of its vectors exactly, not through the graph
 * (see searchVector).
 */
const SCOPED_SCAN_ROWS = 10_000;

/** Turns on each side of a hit whose filter columns are checked in memory before the seek falls back to SQL. */
const NEAREST_TURNS = 4;

/**
 * The turns of a conversation on one side of a hit, nearest first, among those
 * `where` admits; `bound` names the six values (subject, session, from, to,
 * at, rowid): SQL parameters, or expressions of an outer row.
 */
function timelineSql(direction: 'previous' | 'next', where: string, bound: readonly string[]): string {
  const [subject, session, from, to, at, rowid] = bound;
  const [before, order] = direction === 'previous' ? ['<', 'DESC'] : ['>', 'ASC'];
  return `SELECT m.rowid AS rowid, m.valid_from AS valid_from FROM memories m INDEXED BY memories_timeline
    WHERE m.kind = 'episodic' AND m.subject = ${subject} AND m.session IS ${session} AND m.valid_from BETWEEN ${from} AND ${to}
      AND (m.valid_from ${before} ${at} OR m.rowid ${before} ${rowid}) AND ${where}
    ORDER BY m.valid_from ${order}, m.rowid ${order}`;
}

/** Rows whose kind of writing a partition remembers at most (a few MB); past it the memo starts again. */
const MAX_REMEMBERED_SCRIPTS = 200_000;

/** Most distinct query tokens sent to FTS5 (a pasted document must not become a 10,000-term OR). */
const MAX_QUERY_TOKENS = 64;

/**
 * Past this share of soft-removed slots the graph is rebuilt from the rows
 * rather than patched. usearch 2.25 aborted the process (heap corruption)
 * loading a file with 49 % or more of its slots removed; 2.26 loads them, but
 * removed slots still cost memory and search time, and a rebuild leaves no
 * ghost vectors at all. A quarter keeps far from the measured edge.
 */
export const COMPACT_SHARE = 0.25;

/** An episodic row placed in its conversation: what a neighbour seek starts from. */
interface Turn {
  id: string;
  rowid: number;
  subject: string | null;
  session: string | null;
  validFrom: number;
}

interface GraphFile {
  generation: number;
  bytes: number;
  sha256: string;
  nodes: number;
  removed: number;
}

/**
 * One tenant's partition: a SQLite file (rows, purposes, FTS5) and the HNSW
 * graph over its vectors. All SQLite work is synchronous (better-sqlite3), so
 * each method is atomic with respect to the others in this process.
 */
export class TenantPartition {
  /** The kind of writing of rows already read (`scriptGroups`), by rowid. */
  private readonly scripts = new Map<number, ScriptGroup>();
  private readonly db: Database.Database;
  /** The HNSW graph; loaded on first use (see `graph`). */
  private readonly vectorGraph: VectorGraph;
  private graphLoaded = false;
  private readonly cache = new Map<string, Database.Statement>();
  /** The rows' filter columns in memory, for the routes' candidate checks (created once the schema is migrated). */
  private readonly policyRows: PolicyRows;
  /** Document frequencies of query terms, for planning BM25 queries. */
  private readonly terms: TermFrequencies;
  private addedSinceSave = 0;
  /** Uses counted and not yet written, by id (see `recordUsage`). */
  private readonly pendingUsage = new Map<string, { retrieved: number; adopted: number; lastUsedAt: number }>();
  private usageWaiting = 0;
  /** Share of the graph's candidates the filters admitted, lately (see OVERSAMPLING_MARGIN). */
  private admittedShare = 0.5;
  /** The model whose vectors the partition holds, fixed when it was created (a model change drops and rebuilds it). */
  readonly partitionModel: string = '';
  /** The rows format the file is stamped with (`user_version`): what its rows are written as (see `rowJson`). */
  private readonly rowsFormat: number = 0;

  constructor(
    private readonly files: PartitionFiles,
    private readonly options: PartitionOptions,
  ) {
    this.db = new Database(files.db);
    this.vectorGraph = new VectorGraph(options.dimensions, options.graph);
    try {
      // A row (record, int8 vector, filter columns) takes ~1.4 KB: two fit a 4 KB page and a third of it stayed empty.
      // 16 KB pages hold eleven (22 % less file). Only a new file takes it; an older one keeps its pages until rebuilt.
      this.db.pragma(`page_size = ${PAGE_SIZE}`);
      this.db.pragma('journal_mode = WAL');
      // Freed pages and deleted cells are zeroed, so purged content does not linger in free space.
      this.db.pragma('secure_delete = ON');
      this.db.pragma('synchronous = NORMAL');
      // Checkpoint every ~40 MiB of WAL rather than 4 MiB (fewer fsyncs while projecting); purge checkpoints at once.
      // Counted in the file's own pages: 4 KB in files made before PAGE_SIZE.
      this.db.pragma(
        `wal_autocheckpoint = ${Math.round(WAL_CHECKPOINT_BYTES / (this.db.pragma('page_size', { simple: true }) as number))}`,
      );
      const formats = options.formats ?? FORMAT_VERSIONS;
      const fresh = this.checkRowsFormat(formats.indexRows);
      this.db.exec(TENANT_SCHEMA);
      migrateTenantSchema(this.db);
      // A new file is written in this build's format; an older one keeps its stamp until a rebuild replaces it (see planFormats).
      if (fresh) this.db.pragma(`user_version = ${Math.trunc(formats.indexRows)}`);
      this.rowsFormat = this.db.pragma('user_version', { simple: true }) as number;
      this.migrateVectorsFormat(formats.vectors, fresh);
      this.deriveTextIfStale();
      this.db.prepare('INSERT OR IGNORE INTO vector_model (one, model) VALUES (1, ?)').run(options.model);
      this.partitionModel = partitionModelOf(this.db)!;
      // FTS5's own secure delete removes a purged document's terms from existing index segments.
      this.db.prepare(`INSERT INTO memories_fts (memories_fts, rank) VALUES ('secure-delete', 1)`).run();
      this.policyRows = new PolicyRows(this.db);
      this.terms = new TermFrequencies(this.db, () => this.policyRows.rowWrites);
    } catch (error) {
      // A file that fails to open (not a database, corrupt) must not stay open behind the caller's back.
      this.db.close();
      throw error;
    }
  }

  /**
   * Stores each record as its id's current version. The same version again
   * replaces that row (a re-index); a higher version closes the current row
   * at its own transaction time and becomes current; a lower one (a replay
   * behind the index) changes nothing.
   */
  upsert(memories: IndexedMemory[]): void {
    const removedKeys: number[] = [];
    /** Rows inserted by this call, by rowid: a version superseded later in the same call keeps its node too. */
    const added = new Map<number, Float32Array | undefined>();
    // A vector of another model than the partition's never enters it: the row waits for one of the right model.
    const accepts = (model: string | undefined) => this.modelCurrent && (model ?? this.options.model) === this.options.model;
    // Loaded before the rows change: a graph loaded after would be rebuilt from rows that already hold this call's vectors.
    if (memories.some((m) => m.vector && accepts(m.model))) this.loadGraph();
    const now = Date.now();
    this.db.transaction(() => {
      for (const { record, vector: given, model } of memories) {
        const stored = given && accepts(model) ? quantise(given) : undefined;
        const current = this.stmt('SELECT rowid, version, vector_model FROM memories WHERE id = ? AND tx_to IS NULL').get(record.id) as
          { rowid: number; version: number; vector_model: string | null } | undefined;
        const txFrom = millis(record.revisedAt ?? record.recordedAt, 'revisedAt');
        if (current && current.version > record.version) continue;
        if (!current && this.stmt('SELECT 1 FROM memories WHERE id = ? AND version >= ?').get(record.id, record.version)) continue;
        if (current && current.version === record.version) {
          // A row without a vector has no node: replacing it leaves the graph as it is.
          if (current.vector_model !== null) {
            this.loadGraph();
            removedKeys.push(current.rowid);
          }
          this.deleteRow(current.rowid);
          added.delete(current.rowid);
        } else if (current) {
          this.stmt('UPDATE memories SET tx_to = ? WHERE rowid = ?').run(txFrom, current.rowid);
        }
        const rowid = this.insertRow(record, stored, txFrom, now);
        // The graph gets the vector as the row holds it, so it equals a graph rebuilt from the rows.
        added.set(rowid, stored && this.vectorOf(stored));
      }
      // The generation stamps the graph: rows written without a vector leave it (and its saved file) current.
      if (removedKeys.length > 0 || [...added.values()].some((v) => v)) this.bumpGeneration();
    })();
    // The graph follows the committed rows (older versions keep their nodes: knownAsOf queries reach them).
    const keys = [...added].flatMap(([rowid, vector]) => (vector ? [{ rowid, vector }] : []));
    if (removedKeys.length === 0 && keys.length === 0) return;
    this.graph.remove(removedKeys);
    if (this.graph.removedShare > COMPACT_SHARE) {
      // The rows already hold this call's records, so the rebuilt graph has them too.
      this.rebuildGraph();
      this.saveGraph();
      return;
    }
    this.graph.add(
      keys.map((k) => k.rowid),
      keys.map((k) => k.vector),
    );
    this.addedSinceSave += keys.length;
    if (this.addedSinceSave >= this.options.persistEveryRows) this.saveGraph();
  }

  get(id: string): IndexedMemory | undefined {
    const row = this.stmt(
      `SELECT ${JOINED_RECORD_COLUMNS}, m.vector, m.vector_model, u.retrieved, u.adopted, u.last_used_at FROM memories m LEFT JOIN usage u ON u.id = m.id WHERE m.id = ? AND m.tx_to IS NULL`,
    ).get(id) as (RecordRow & { vector: Buffer; vector_model: string | null } & UsageColumns) | undefined;
    if (!row) return undefined;
    const record = withUsage(MemoryRecord.parse(this.recordOf(row)), this.withPendingUsage(id, row));
    return row.vector_model === null ? { record } : { record, vector: this.vectorOf(row.vector), model: row.vector_model };
  }

  /** Whether the partition's vectors are of the configured model (else: dense route off, nothing embedded, reindex). */
  get modelCurrent(): boolean {
    return this.partitionModel === this.options.model;
  }

  /** Up to `limit` current rows waiting for a vector, oldest pending first; none while the partition's model is stale. */
  pendingEmbeddings(limit: number): PendingEmbedding[] {
    return this.modelCurrent ? pendingRows(this.db, limit) : [];
  }

  /** Pending rows and when the oldest became pending (epoch ms). */
  embeddingLag(): PartitionLag {
    return { ...lagRow(this.db), modelCurrent: this.modelCurrent };
  }

  /**
   * Stores each vector on its row if that row is still the record's current
   * version and the vector is of the configured model; anything else (a newer
   * version, a purged id, another model, a stale partition) is ignored.
   */
  setVectors(items: EmbeddedVector[]): void {
    if (!this.modelCurrent) return;
    const replaced: number[] = [];
    const added: { rowid: number; vector: Float32Array }[] = [];
    // Loaded before the rows change (see upsert).
    this.loadGraph();
    this.db.transaction(() => {
      for (const item of items) {
        if (item.model !== this.options.model) continue;
        const row = this.stmt(
          `SELECT rowid, vector_model, CASE WHEN tokens IS NULL THEN json_extract(record, '$.content.text') END AS untokenised
           FROM memories WHERE id = ? AND version = ? AND tx_to IS NULL`,
        ).get(item.id, item.version) as { rowid: number; vector_model: string | null; untokenised: string | null } | undefined;
        if (!row) continue;
        const stored = quantise(item.vector);
        this.stmt(
          'UPDATE memories SET vector = ?, vector_model = ?, pending_since = NULL, tokens = coalesce(tokens, ?) WHERE rowid = ?',
        ).run(stored, item.model, row.untokenised === null ? null : countTokens(row.untokenised), row.rowid);
        if (row.vector_model !== null) replaced.push(row.rowid);
        added.push({ rowid: row.rowid, vector: this.vectorOf(stored) });
      }
      if (added.length > 0) this.bumpGeneration();
    })();
    if (added.length === 0) return;
    this.graph.remove(replaced);
    if (this.graph.removedShare > COMPACT_SHARE) {
      this.rebuildGraph();
      this.saveGraph();
      return;
    }
    this.graph.add(
      added.map((a) => a.rowid),
      added.map((a) => a.vector),
    );
    this.addedSinceSave += added.length;
    if (this.addedSinceSave >= this.options.persistEveryRows) this.saveGraph();
  }

  /**
   * Counts a use of each id (once per call), in memory until USAGE_BATCH ids
   * wait: one transaction for many recalls costs a third of one per recall
   * (5.7 against 13.5 µs per id), most of which was committing pages that
   * random ids spread over the table. Reads add the waiting counts
   * (`get`, `rows`); `writeUsage` writes them (the index also does after
   * USAGE_DELAY_MS, and at flush and close). A count is kept only for an id
   * the partition holds when it is written; a purge drops the purged ids'.
   */
  recordUsage(ids: string[], use: 'retrieved' | 'adopted', at: number): void {
    if (this.pendingUsage.size === 0) this.usageWaiting = Date.now();
    for (const id of new Set(ids)) {
      let usage = this.pendingUsage.get(id);
      if (!usage) this.pendingUsage.set(id, (usage = { retrieved: 0, adopted: 0, lastUsedAt: at }));
      usage[use] += 1;
      usage.lastUsedAt = Math.max(usage.lastUsedAt, at);
    }
    if (this.pendingUsage.size >= USAGE_BATCH) this.writeUsage();
  }

  /** Since when (epoch ms) counted uses have waited to be written; undefined when none wait. */
  get usageWaitingSince(): number | undefined {
    return this.pendingUsage.size > 0 ? this.usageWaiting : undefined;
  }

  /** Writes the counted uses waiting in memory, in one transaction. */
  writeUsage(): void {
    if (this.pendingUsage.size === 0) return;
    const add = this.stmt(
      `INSERT INTO usage (id, retrieved, adopted, last_used_at) SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?)
       ON CONFLICT (id) DO UPDATE SET retrieved = retrieved + excluded.retrieved, adopted = adopted + excluded.adopted,
         last_used_at = max(coalesce(last_used_at, 0), excluded.last_used_at)`,
    );
    this.db.transaction(() => {
      for (const [id, usage] of this.pendingUsage) add.run(id, usage.retrieved, usage.adopted, usage.lastUsedAt, id);
    })();
    this.pendingUsage.clear();
  }

  /**
   * The JSON a row stores for its record. Rows of format 2 leave out what the
   * row's columns hold (id, version, kind, status, subject, session), the
   * tenant (the partition's own) and usage counts that are all zero (the
   * usage table keeps the counts since): about 0.2 KB of a 0.75 KB record. A
   * partition of format 1 keeps whole records until it is rebuilt, so that
   * the build that wrote it can still read it.
   */
  private rowJson(record: MemoryRecord): string {
    if (this.rowsFormat < SLIM_ROWS_FORMAT) return JSON.stringify(record);
    const {
      tenant,
      id: _id,
      version: _version,
      kind: _kind,
      status: _status,
      subject: _subject,
      session: _session,
      usage,
      ...rest
    } = record;
    return JSON.stringify({
      ...(tenant === this.options.tenant ? {} : { tenant }),
      ...(isUnused(usage) ? {} : { usage }),
      ...rest,
    });
  }

  /** A row's record: its columns, then its JSON (which holds them too in rows of format 1), not validated. */
  private recordOf(row: RecordRow): MemoryRecord {
    return {
      tenant: this.options.tenant,
      id: row.id,
      version: row.version,
      kind: row.kind,
      status: row.status,
      subject: row.subject,
      ...(row.session === null ? {} : { session: row.session }),
      usage: { retrieved: 0, adopted: 0, lastUsedAt: null },
      ...JSON.parse(row.record),
    } as MemoryRecord;
  }

  private recordWithUsage(record: MemoryRecord, row: UsageColumns): MemoryRecord {
    return withUsage(record, this.pendingUsage.size === 0 ? row : this.withPendingUsage(record.id, row));
  }

  /** A row's usage columns with the uses still waiting in memory added. */
  private withPendingUsage(id: string, row: UsageColumns): UsageColumns {
    const pending = this.pendingUsage.get(id);
    if (!pending) return row;
    return {
      retrieved: (row.retrieved ?? 0) + pending.retrieved,
      adopted: (row.adopted ?? 0) + pending.adopted,
      last_used_at: Math.max(row.last_used_at ?? 0, pending.lastUsedAt),
    };
  }

  count(): number {
    return (this.stmt('SELECT count(*) AS n FROM memories WHERE tx_to IS NULL').get() as { n: number }).n;
  }

  /**
   * The current records with rowid > `after`, at most `limit` of them: how
   * many, their content's bytes (`contentBytes`: the UTF-8 length of the
   * content's JSON, which SQLite takes out of the stored record as it was
   * written) and the last rowid, or null when none is left.
   */
  storedUsageAfter(after: number, limit: number): StoredUsage & { last: number | null } {
    return this.stmt(
      `SELECT count(*) AS memories, total(length(CAST(json_extract(record, '$.content') AS BLOB))) AS bytes, max(rowid) AS last
       FROM (SELECT rowid, record FROM memories WHERE rowid > ? AND tx_to IS NULL ORDER BY rowid LIMIT ?)`,
    ).get(after, limit) as StoredUsage & { last: number | null };
  }

  /** Up to `limit` records with rowid > `after`, in rowid order. */
  recordsAfter(after: number, limit: number): { rowid: number; record: MemoryRecord }[] {
    const rows = this.stmt(`SELECT rowid, ${RECORD_COLUMNS} FROM memories WHERE rowid > ? AND tx_to IS NULL ORDER BY rowid LIMIT ?`).all(
      after,
      limit,
    ) as ({ rowid: number } & RecordRow)[];
    return rows.map((r) => ({ rowid: r.rowid, record: this.recordOf(r) }));
  }

  /** Up to `limit` lineage entries with rowid > `after`; the JSON is taken apart by SQLite, not parsed whole. */
  lineageAfter(after: number, limit: number): { rowid: number; entry: LineageEntry }[] {
    return this.lineageRows(
      `SELECT ${LINEAGE_COLUMNS} FROM memories WHERE rowid > ? AND tx_to IS NULL ORDER BY rowid LIMIT ?`,
      after,
      limit,
    );
  }

  /**
   * The current lineage entries, in insertion order, of the records with one of these ids, whose inputs
   * (parent records, source events) include one of them, or whose subject or owner is one of `subjects`.
   * Each part is a seek (memories_current, memory_inputs, memories_by_subject, memories_by_owner).
   */
  lineageOf(ids: readonly string[], subjects: readonly string[]): LineageEntry[] {
    const rows = this.lineageRows(
      `SELECT ${LINEAGE_COLUMNS} FROM memories WHERE tx_to IS NULL AND rowid IN (
         SELECT rowid FROM memories WHERE id IN (SELECT value FROM json_each(@ids)) AND tx_to IS NULL
         UNION SELECT row FROM memory_inputs WHERE input IN (SELECT value FROM json_each(@ids))
         UNION SELECT rowid FROM memories WHERE subject IN (SELECT value FROM json_each(@subjects)) AND tx_to IS NULL
         UNION SELECT rowid FROM memories WHERE owner IN (SELECT value FROM json_each(@subjects)) AND tx_to IS NULL)
       ORDER BY rowid`,
      { ids: JSON.stringify(ids), subjects: JSON.stringify(subjects) },
    );
    return rows.map((r) => r.entry);
  }

  private lineageRows(sql: string, ...params: unknown[]): { rowid: number; entry: LineageEntry }[] {
    const rows = this.stmt(sql).all(...params) as {
      rowid: number;
      id: string;
      kind: MemoryKind;
      owner: string;
      project: string | null;
      recorded_at: number;
      expires_at: number | null;
      vector_model: string | null;
      subject: string;
      rule: string;
      sources: string;
      parents: string;
    }[];
    return rows.map((r) => ({
      rowid: r.rowid,
      entry: {
        id: r.id,
        kind: r.kind,
        subject: r.subject,
        owner: r.owner,
        rule: r.rule,
        sourceEventIds: r.sources === '[]' ? [] : (JSON.parse(r.sources) as string[]),
        parentIds: r.parents === '[]' ? [] : (JSON.parse(r.parents) as string[]),
        recordedAt: new Date(r.recorded_at).toISOString(),
        expiresAt: r.expires_at === null ? null : new Date(r.expires_at).toISOString(),
        ...(r.project !== null ? { project: r.project } : {}),
        ...(r.vector_model !== null ? { vectorModel: r.vector_model } : {}),
      },
    }));
  }

  /**
   * A page in listing order (recorded_at, then id) of the rows `sql` (the compiled filter) admits, with the
   * subject, working-memory and position conditions of `MemoryIndex.list`; read through memories_listing.
   */
  list(sql: FilterSql, query: Omit<ListQuery, 'tenant' | 'filter'>): MemoryRecord[] {
    const where = [sql.where];
    const params: (string | number)[] = [...sql.params];
    if (query.subject !== undefined) {
      where.push('m.subject = ?');
      params.push(query.subject);
    }
    if (query.working) {
      const { owner, session } = query.working;
      where.push(`(m.kind <> 'working' OR m.owner = ?${session === undefined ? '' : ' OR m.session = ?'})`);
      params.push(owner, ...(session === undefined ? [] : [session]));
    }
    if (query.after) {
      const at = millis(query.after.recordedAt, 'after.recordedAt');
      where.push('(m.recorded_at > ? OR (m.recorded_at = ? AND m.id > ?))');
      params.push(at, at, query.after.id);
    }
    const rows = this.stmt(
      `SELECT ${JOINED_RECORD_COLUMNS}, u.retrieved, u.adopted, u.last_used_at FROM memories m LEFT JOIN usage u ON u.id = m.id
       WHERE ${where.join(' AND ')} ORDER BY m.recorded_at, m.id LIMIT ?`,
    ).all(...params, query.limit) as (RecordRow & UsageColumns)[];
    return rows.map((r) => this.recordWithUsage(this.recordOf(r), r));
  }

  /** Every stored version of a record, oldest first. */
  versions(id: string): MemoryRecord[] {
    const rows = this.stmt(
      `SELECT ${JOINED_RECORD_COLUMNS}, u.retrieved, u.adopted, u.last_used_at FROM memories m LEFT JOIN usage u ON u.id = m.id
       WHERE m.id = ? ORDER BY m.version`,
    ).all(id) as (RecordRow & UsageColumns)[];
    return rows.map((r) => this.recordWithUsage(this.recordOf(r), r));
  }

  currentFacts(factKey: string): MemoryRecord[] {
    return (
      this.stmt(`SELECT ${RECORD_COLUMNS} FROM memories WHERE fact_key = ? AND tx_to IS NULL ORDER BY tx_from, rowid`).all(
        factKey,
      ) as RecordRow[]
    ).map((r) => this.recordOf(r));
  }

  allIds(): string[] {
    return (this.stmt('SELECT id FROM memories WHERE tx_to IS NULL ORDER BY rowid').all() as { id: string }[]).map((r) => r.id);
  }

  /**
   * BM25 route: rowids best first, among the rows the filter admits. FTS5
   * scores every document that matches, about 2 µs each, so the query is
   * planned to bound that work: the rarest words whose document frequencies
   * (`TermFrequencies`) sum to at most BM25_BUDGET "drive" the match and the other words only add
   * to the score, `(rare) AND (rare OR common)`. When even the rarest word is
   * that common (it carries little IDF anyway), only the newest BM25_BUDGET
   * matches are scored (before the policy filter, so fewer may survive it);
   * the dense route still covers the whole partition. Either way at most
   * about BM25_BUDGET rows match, and they are checked against the filter in
   * memory (`PolicyRows`) rather than joined with the rows table in SQL, which
   * cost as much as the match. Scores are FTS5's bm25() negated, so that
   * higher is better.
   */
  searchText(text: string, filter: IndexFilter, depth: number, scoped = this.scopedRowsOf(filter)): { rowid: number; score: number }[] {
    const terms = [...new Set(queryTerms(text, this.options.text))]
      .slice(0, MAX_QUERY_TOKENS)
      .map((term) => ({ term, df: this.terms.of(term) }))
      // A word no document contains cannot match; dropping it keeps the expression small.
      .filter((t) => t.df > 0)
      .sort((a, b) => a.df - b.df);
    if (terms.length === 0) return [];

    const drivers: typeof terms = [];
    let driverPostings = 0;
    for (const t of terms) {
      if (drivers.length > 0 && driverPostings + t.df > BM25_BUDGET) break;
      drivers.push(t);
      driverPostings += t.df;
    }
    const any = (ts: typeof terms) => ts.map((t) => `"${t.term.replaceAll('"', '""')}"`).join(' OR ');
    const match = drivers.length === terms.length ? any(terms) : `(${any(drivers)}) AND (${any(terms)})`;
    if (scoped !== undefined)
      return this.searchTextIn(scoped, match, drivers.length === terms.length ? terms : [...drivers, ...terms], filter, depth);

    // Newest rows first, so that a capped scan keeps the most recent matches.
    const scanLimit = driverPostings > BM25_BUDGET ? BM25_BUDGET : -1;
    // bm25() with an explicit rowid order rather than FTS5's `ORDER BY rank`, so the scan can be capped before scoring.
    const matches = this.stmt(
      `SELECT rowid, bm25(memories_fts) AS score FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?`,
    ).all(match, scanLimit) as { rowid: number; score: number }[];
    const admitted = this.policyRows.admit(
      matches.map((m) => m.rowid),
      filter,
    );
    return (
      matches
        .filter((m) => admitted.has(m.rowid))
        .sort((a, b) => a.score - b.score || b.rowid - a.rowid)
        .slice(0, depth)
        // FTS5's bm25() is negative, lower better; `0 - x` rather than `-x` keeps a zero score from becoming -0.
        .map((m) => ({ rowid: m.rowid, score: 0 - m.score }))
    );
  }

  /**
   * The BM25 route inside a scope (`scopedRows`): every match of the planned
   * expression, unscored and uncapped (a rowid list costs a tenth of scoring
   * it), kept when in the scope and admitted by the filter, then scored. So
   * no cap drops a scoped match, however many newer ones lie outside it.
   * Survivors are scored in TypeScript with FTS5's own bm25() (`bm25Of`),
   * which reads each survivor's record; when they are many against the
   * matches (SCOPED_TEXT_SHARE), FTS5 scores the whole match instead.
   * `phrases` are the expression's terms in its order, repeats kept, as
   * bm25() counts them.
   */
  private searchTextIn(
    scoped: readonly number[],
    match: string,
    phrases: readonly { term: string; df: number }[],
    filter: IndexFilter,
    depth: number,
  ): { rowid: number; score: number }[] {
    if (scoped.length === 0) return [];
    const inScope = new Set(scoped);
    const matches = this.stmt('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?').pluck().all(match) as number[];
    const candidates = matches.filter((rowid) => inScope.has(rowid));
    const admitted = this.policyRows.admit(candidates, filter, scoped);
    const survivors = candidates.filter((rowid) => admitted.has(rowid));
    const scored =
      survivors.length > matches.length * SCOPED_TEXT_SHARE
        ? (
            this.stmt('SELECT rowid, 0 - bm25(memories_fts) AS score FROM memories_fts WHERE memories_fts MATCH ?').all(match) as {
              rowid: number;
              score: number;
            }[]
          ).filter((m) => admitted.has(m.rowid))
        : this.bm25Of(survivors, phrases);
    return scored.sort((a, b) => b.score - a.score || b.rowid - a.rowid).slice(0, depth);
  }

  /**
   * FTS5's bm25() of each row for the query `phrases` (k1 1.2, b 0.75; idf
   * log((N - n + 0.5) / (n + 0.5)), at least 1e-6; N and the average length
   * from FTS5's own totals, a row's length from its docsize), negated so that
   * higher is better. A phrase's frequency in a row is counted on the row's
   * terms (`documentTerms`, the analysis its FTS row was made with); its
   * document frequency is `TermFrequencies`' (within an eighth of FTS5's).
   */
  private bm25Of(rowids: readonly number[], phrases: readonly { term: string; df: number }[]): { rowid: number; score: number }[] {
    if (rowids.length === 0) return [];
    const totals = readVarints(this.stmt('SELECT block FROM memories_fts_data WHERE id = 1').pluck().get() as Buffer);
    const [rows, tokens] = [totals[0] ?? 0, totals[1] ?? 0];
    const averageLength = rows > 0 ? tokens / rows : 1;
    const idf = phrases.map(({ df }) => Math.max(Math.log((rows - df + 0.5) / (df + 0.5)), 0) || 1e-6);
    const list = JSON.stringify(rowids);
    const lengths = new Map(
      (
        this.stmt('SELECT id, sz FROM memories_fts_docsize WHERE id IN (SELECT value FROM json_each(?))').raw().all(list) as [
          number,
          Buffer,
        ][]
      ).map(([id, size]) => [id, readVarints(size)[0] ?? 0]),
    );
    const records = this.stmt(`SELECT rowid, ${RECORD_COLUMNS} FROM memories WHERE rowid IN (SELECT value FROM json_each(?))`).all(
      list,
    ) as ({ rowid: number } & RecordRow)[];
    const [k1, b] = [1.2, 0.75];
    return records.map((row) => {
      const counts = new Map<string, number>();
      for (const term of documentTerms(this.recordOf(row), this.options.text)) counts.set(term, (counts.get(term) ?? 0) + 1);
      const length = lengths.get(row.rowid) ?? 0;
      let score = 0;
      phrases.forEach(({ term }, i) => {
        const f = counts.get(term) ?? 0;
        score += (idf[i] * (f * (k1 + 1))) / (f + k1 * (1 - b + (b * length) / averageLength));
      });
      return { rowid: row.rowid, score };
    });
  }

  /**
   * Dense route: rowids with their cosine, best first. usearch's JS binding has
   * no filtered search (no predicate callback), so the graph is oversampled and
   * its candidates are checked against the filter in memory (`PolicyRows`);
   * when too few pass (a selective filter), the filtered rows are scanned
   * exactly instead, which is cheap precisely because the filter is selective.
   */
  searchVector(
    query: Float32Array,
    filter: IndexFilter,
    sql: FilterSql,
    depth: number,
    scoped = this.scopedRowsOf(filter),
  ): { rowid: number; cosine: number }[] {
    const queryNorm = norm(query);
    // Vectors of another model than the query's are not comparable with it: such a partition waits for a reindex.
    if (queryNorm === 0 || !this.modelCurrent) return [];
    // A scope of few rows is scored exactly, without the graph; a wider one narrows the scan the graph may fall back to.
    if (scoped !== undefined && scoped.length <= SCOPED_SCAN_ROWS) return this.scanVectors(query, queryNorm, filter, sql, depth, scoped);
    // Oversampled by the share of candidates filters have lately admitted (a search costs about its k), then deeper.
    const first = Math.min(Math.max(GRAPH_DEPTHS[0], Math.ceil((depth * OVERSAMPLING_MARGIN) / this.admittedShare)), GRAPH_DEPTHS[1]);
    for (const k of [first, Math.max(GRAPH_DEPTHS[1], depth * 2, first * 2)]) {
      const matches = this.graph.searchWithCosine(query, k);
      // Only the filter is checked: the graph's similarities are those of the rows' own int8 components (see DEFAULT_QUANTIZATION).
      const allowed = this.policyRows.admit(
        matches.map((m) => m.key),
        filter,
        scoped,
      );
      if (matches.length > 0) {
        const share = Math.max(allowed.size / matches.length, MIN_ADMITTED_SHARE);
        this.admittedShare += (share - this.admittedShare) * SHARE_SMOOTHING;
      }
      if (allowed.size >= depth || matches.length >= this.graph.size) {
        return matches
          .filter((m) => allowed.has(m.key))
          .map((m) => ({ rowid: m.key, cosine: m.cosine }))
          .sort((a, b) => b.cosine - a.cosine || a.rowid - b.rowid)
          .slice(0, depth);
      }
    }
    // A selective filter: scan the rows it allows exactly, which is cheap precisely because they are few.
    return this.scanVectors(query, queryNorm, filter, sql, depth, scoped);
  }

  /**
   * The rows the filter admits (`sql`; among the scope's `scoped` rows when
   * given, checked in memory by `PolicyRows` and then read by rowid), each
   * vector compared with the query exactly, best first: the dense route
   * without the graph.
   */
  private scanVectors(
    query: Float32Array,
    queryNorm: number,
    filter: IndexFilter,
    sql: FilterSql,
    depth: number,
    scoped: readonly number[] | undefined,
  ): { rowid: number; cosine: number }[] {
    const candidates = (
      scoped === undefined
        ? this.stmt(`SELECT m.rowid AS rowid, m.vector AS vector FROM memories m WHERE m.vector_model IS NOT NULL AND ${sql.where}`).all(
            ...sql.params,
          )
        : this.stmt(
            `SELECT m.rowid AS rowid, m.vector AS vector FROM json_each(?) j CROSS JOIN memories m ON m.rowid = j.value
             WHERE m.vector_model IS NOT NULL`,
          ).all(JSON.stringify([...this.policyRows.admit(scoped, filter, scoped)]))
    ) as { rowid: number; vector: Buffer }[];
    // One buffer for every row's vector: a fresh one per row cost as much as the cosine.
    const vector = new Float32Array(this.options.dimensions);
    return candidates
      .map((c) => ({ rowid: c.rowid, cosine: cosine(query, dequantise(c.vector, this.options.dimensions, vector), queryNorm) }))
      .sort((a, b) => b.cosine - a.cosine || a.rowid - b.rowid)
      .slice(0, depth);
  }

  /**
   * The rows (any version, in rowid order) holding a key of every group of
   * the scope (`scopeGroups`), read from `scope_keys`: a seek per key.
   * Undefined when the scope names no key (a valid-time range only), so it
   * narrows nothing here. The rest of the filter is not applied.
   */
  scopedRows(scope: IndexScope): number[] | undefined {
    const groups = scopeGroups(scope);
    if (groups.length === 0) return undefined;
    if (groups.some((group) => group.length === 0)) return [];
    return this.stmt(
      groups.map(() => 'SELECT row FROM scope_keys WHERE key IN (SELECT value FROM json_each(?))').join(' INTERSECT ') + ' ORDER BY row',
    )
      .pluck()
      .all(...groups.map((group) => JSON.stringify(group))) as number[];
  }

  /** The rows the filter's scope narrows to (`scopedRows`); undefined without a scope or one naming no key. */
  scopedRowsOf(filter: IndexFilter): number[] | undefined {
    return filter.scope ? this.scopedRows(filter.scope) : undefined;
  }

  /**
   * For each id the filter admits (an episodic record), the rowids of the
   * admitted episodic records just before and after it in its conversation:
   * same subject, same session or, both without one, at most
   * CONVERSATION_GAP_MS apart; ordered by valid time then insertion (rowid:
   * the turns of one conversation often share a time). A record the filter
   * rejects is passed over as if absent. The filter is checked in memory
   * (`PolicyRows`) on the few turns nearest each side; should none of them
   * pass, the seek is made again with the filter in SQL (`sql`), which skips
   * any number of rejected turns.
   */
  neighbours(ids: string[], filter: IndexFilter, sql: FilterSql): { id: string; previous?: number; next?: number }[] {
    const admit = this.policyRows.checker(filter);
    // Every version of every id in one statement, newest first: the newest the filter admits is the one a search found.
    const versions = this.stmt(
      `SELECT m.id AS id, m.rowid AS rowid, m.subject AS subject, m.session AS session, m.valid_from AS validFrom
       FROM json_each(?) j CROSS JOIN memories m ON m.id = j.value WHERE m.kind = 'episodic' ORDER BY m.rowid DESC`,
    ).all(JSON.stringify(ids)) as Turn[];
    const admittedVersions = admit(versions.map((v) => v.rowid));
    const hits = new Map<string, Turn>();
    for (const version of versions) if (admittedVersions.has(version.rowid) && !hits.has(version.id)) hits.set(version.id, version);
    return this.adjacentTurns(
      [...new Set(ids)].flatMap((id) => hits.get(id) ?? []),
      admit,
      sql,
    );
  }

  /**
   * `HybridQuery.smoothing` on row ids: the fused rows (which the filter
   * admitted) each lifted by their admitted neighbours (`adjacentTurns`),
   * ranked by `smoothByNeighbours`, best first; no row is read (`PolicyRows`
   * knows where each turn sits). Row ids stand for record ids: a filter
   * admits at most one version of a record (the current one, or the one
   * `knownAsOf` names), so the ranking is the composition's (`smoothedSearch`).
   */
  smoothed(
    fused: { rowid: number; score: number }[],
    filter: IndexFilter,
    sql: FilterSql,
    factor: number,
    scoped = this.scopedRowsOf(filter),
  ): { rowid: number; score: number; lift?: number; neighbourOf?: number }[] {
    const found = this.adjacentTurns(
      this.policyRows.turns(fused.map((f) => f.rowid)).map((turn) => ({ ...turn, id: String(turn.rowid) })),
      this.policyRows.checker(filter, scoped),
      sql,
    );
    const adjacent = new Map<string, Adjacent>(
      found.map(({ id, previous, next }) => [
        id,
        { ...(previous !== undefined ? { previous: String(previous) } : {}), ...(next !== undefined ? { next: String(next) } : {}) },
      ]),
    );
    return smoothByNeighbours(
      fused.map((f) => ({ id: String(f.rowid), score: f.score })),
      adjacent,
      factor,
    ).map(({ id, score, lift, neighbourOf }) => ({
      rowid: Number(id),
      score,
      ...(lift !== undefined ? { lift, neighbourOf: Number(neighbourOf) } : {}),
    }));
  }

  /**
   * Which conversation each of these rows belongs to (`turnConversations`, domain/recall/evidence), keyed
   * by rowid as a string; rows that are no turn are left out. No row is read (`PolicyRows` knows where each turn sits).
   */
  conversations(rowids: number[]): Map<string, string> {
    return turnConversations(
      this.policyRows.turns(rowids).map((turn) => ({
        id: String(turn.rowid),
        subject: turn.subject,
        ...(turn.session !== null ? { session: turn.session } : {}),
        at: turn.validFrom,
      })),
    );
  }

  /** For each turn (in order), the admitted turns just before and after it in its conversation (see `neighbours`). */
  private adjacentTurns(
    turns: Turn[],
    admit: (rowids: number[]) => Set<number>,
    sql: FilterSql,
  ): { id: string; previous?: number; next?: number }[] {
    const seeks = turns
      .filter((hit) => hit.subject !== null)
      .map((hit) => {
        const gap = hit.session === null ? CONVERSATION_GAP_MS : Number.MAX_SAFE_INTEGER;
        const at = hit.validFrom;
        // Within [at - gap, at] (or [at, at + gap]) a turn at the hit's own time counts only on its side of the hit's rowid.
        return {
          id: hit.id,
          rowid: hit.rowid,
          gap,
          previous: [hit.subject, hit.session, Math.max(at - gap, Number.MIN_SAFE_INTEGER), at, at, hit.rowid],
          next: [hit.subject, hit.session, at, Math.min(at + gap, Number.MAX_SAFE_INTEGER), at, hit.rowid],
        };
      });
    const nearest = (direction: 'previous' | 'next'): (number | undefined)[] => {
      const near = seeks.map((seek) => this.policyRows.turnsBeside(seek.rowid, direction, seek.gap, NEAREST_TURNS));
      const admitted = admit(near.flat());
      return near.map((turns, i) => {
        const found = turns.find((rowid) => admitted.has(rowid));
        if (found !== undefined || turns.length < NEAREST_TURNS) return found;
        // Every turn near enough was rejected: seek on with the filter in SQL, which skips any number of them.
        return this.timelineSeek(direction, sql.where).get(...seeks[i][direction], ...sql.params, 1) as number | undefined;
      });
    };
    const before = nearest('previous');
    const after = nearest('next');
    return seeks.map(({ id }, i) => ({
      id,
      ...(before[i] !== undefined ? { previous: before[i] } : {}),
      ...(after[i] !== undefined ? { next: after[i] } : {}),
    }));
  }

  /**
   * One seek along a conversation's timeline, `?` bound as (subject, session,
   * from, to, at, rowid), then the filter's parameters and the limit:
   * `session IS ?` matches NULL to NULL, and both ends of the valid-time range
   * bound the index range, so the seek starts next to the hit rather than at
   * the far end of its conversation.
   */
  private timelineSeek(direction: 'previous' | 'next', where: string): Database.Statement {
    return this.stmt(timelineSql(direction, where, ['?', '?', '?', '?', '?', '?']) + ' LIMIT ?').pluck();
  }

  /**
   * What the partition still holds of these erased records (see `MemoryIndex.leftovers`). Rows: any
   * version under a probed id. Terms: FTS documents holding every query word of the text (a subset of its
   * document terms, whatever the analysis), of a rowid no row has any more or of a probed id's row. Vectors:
   * graph nodes at least `minCosine` similar, of such a rowid. The same FTS match tells which texts a current
   * row outside the probes holds verbatim. One statement per probe and route, no record hydrated unless
   * its words all match.
   */
  leftovers(probes: ErasedProbe[], minCosine: number): Leftovers {
    const probed = new Set(probes.map((p) => p.id));
    const rows = new Set(
      this.stmt('SELECT DISTINCT id FROM memories WHERE id IN (SELECT value FROM json_each(?))')
        .pluck()
        .all(JSON.stringify([...probed])) as string[],
    );
    // Per rowid: no row any more (a removed row), a probed id's row, or a surviving row (current or not).
    const owners = this.stmt(
      'SELECT j.value AS rowid, m.id AS id, m.tx_to IS NULL AS current FROM json_each(?) j LEFT JOIN memories m ON m.rowid = j.value',
    );
    const classify = (rowids: number[]) =>
      (owners.all(JSON.stringify(rowids)) as { rowid: number; id: string | null; current: number | null }[]).map((o) => ({
        rowid: o.rowid,
        left: o.id === null || probed.has(o.id),
        surviving: o.id !== null && !probed.has(o.id) && o.current === 1,
      }));
    const terms: string[] = [];
    const vectors: string[] = [];
    const sharedText: string[] = [];
    const match = this.stmt('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?').pluck();
    for (const probe of probes) {
      const words = [...new Set(queryTerms(probe.text, this.options.text))];
      if (words.length > 0) {
        const found = classify(match.all(words.map((w) => `"${w.replaceAll('"', '""')}"`).join(' AND ')) as number[]);
        if (found.some((f) => f.left)) terms.push(probe.id);
        const surviving = found.filter((f) => f.surviving).map((f) => f.rowid);
        if (surviving.length > 0 && [...this.rows(surviving).values()].some((r) => r.record.content.text === probe.text))
          sharedText.push(probe.id);
      }
      if (probe.vector && this.graph.size > 0) {
        const near = this.nearKeys(probe.vector, minCosine);
        if (near.length > 0 && classify(near).some((f) => f.left)) vectors.push(probe.id);
      }
    }
    return { rows: [...rows], terms, vectors, sharedText };
  }

  /** Every graph key at least `minCosine` similar to the vector: the search widens while all it returns are that close. */
  private nearKeys(vector: Float32Array, minCosine: number): number[] {
    for (let k = 16; ; k *= 4) {
      const matches = this.graph.searchWithCosine(vector, k);
      const close = matches.filter((m) => m.cosine >= minCosine);
      if (close.length < matches.length || matches.length < k || k >= this.graph.size) return close.map((m) => m.key);
    }
  }

  rows(rowids: number[]): Map<number, StoredRow> {
    const rows = this.stmt(
      `SELECT m.rowid AS rowid, ${JOINED_RECORD_COLUMNS}, m.vector, m.vector_model, m.tokens, u.retrieved, u.adopted, u.last_used_at
       FROM memories m LEFT JOIN usage u ON u.id = m.id WHERE m.rowid IN (SELECT value FROM json_each(?))`,
    ).all(JSON.stringify(rowids)) as (RecordRow & {
      rowid: number;
      vector: Buffer;
      vector_model: string | null;
      tokens: number | null;
    } & UsageColumns)[];
    // Rows come from the projection, which builds them as MemoryRecords; the hot search path does not
    // re-validate them with zod (get() does).
    return new Map(
      rows.map((r) => [
        r.rowid,
        {
          rowid: r.rowid,
          record: this.recordWithUsage(this.recordOf(r), r),
          // A stale partition's vectors are not comparable with the query's: hits carry none (as on Elasticsearch).
          ...(r.vector_model === this.options.model ? { vector: this.vectorOf(r.vector) } : {}),
          ...(r.tokens !== null ? { tokens: r.tokens } : {}),
        },
      ]),
    );
  }

  /**
   * The kind of writing of each row's text (`scriptGroupOf`), by rowid. A row's text never changes (a new version
   * is a new row, and a rowid is never reused), so each is read once, from the JSON by SQLite, and remembered: one
   * bit per row, no content, dropped with everything else by a purge (`forget`).
   */
  scriptGroups(rowids: number[]): Map<number, ScriptGroup> {
    const unknown = rowids.filter((rowid) => !this.scripts.has(rowid));
    if (unknown.length > 0) {
      if (this.scripts.size + unknown.length > MAX_REMEMBERED_SCRIPTS) this.scripts.clear();
      const rows = this.stmt(
        `SELECT rowid, json_extract(record, '$.content.text') AS text FROM memories WHERE rowid IN (SELECT value FROM json_each(?))`,
      ).all(JSON.stringify(unknown)) as { rowid: number; text: string | null }[];
      for (const { rowid, text } of rows) this.scripts.set(rowid, scriptGroupOf(text ?? ''));
    }
    return new Map(rowids.flatMap((rowid) => (this.scripts.has(rowid) ? [[rowid, this.scripts.get(rowid)!] as const] : [])));
  }

  /**
   * Physical removal. Order matters for erasure: rows go first (secure_delete
   * zeroes their cells and pages), then FTS5 merges its segments so no term
   * list still carries the documents, then the graph drops the nodes and
   * their vector bytes are overwritten in place (usearch removals alone leave
   * them behind) and the file is rewritten; the file is then checked for
   * those bytes and, should any survive, the graph is rebuilt from the rows
   * instead. Last the WAL, which still holds the old pages, is checkpointed
   * and truncated.
   *
   * Safe to run again from any point: the row deletion commits together with
   * a `purge_pending` mark, and a purge that finds the mark (the previous one
   * was killed or failed after its commit) redoes every later step, with the
   * graph rebuilt from the rows since the removed vectors are no longer known.
   * The checkpoint runs on every call, even one that finds nothing to delete.
   */
  async purge(ids: string[]): Promise<void> {
    // Loaded while its saved file is current, so it is scrubbed rather than rebuilt from every row.
    this.loadGraph();
    const resumed = this.state('purge_pending') === 1;
    const removed: { rowid: number; vector: Buffer }[] = [];
    this.db.transaction(() => {
      for (const id of ids) {
        // Every version: an erased record leaves no history behind either.
        for (const row of this.stmt('SELECT rowid, vector FROM memories WHERE id = ?').all(id) as { rowid: number; vector: Buffer }[]) {
          this.deleteRow(row.rowid);
          removed.push(row);
        }
        this.stmt('DELETE FROM usage WHERE id = ?').run(id);
        this.pendingUsage.delete(id);
      }
      if (removed.length > 0) {
        this.bumpGeneration();
        this.stmt(`UPDATE partition_state SET value = 1 WHERE key = 'purge_pending'`).run();
      }
    })();
    // Nor does a document frequency of the purged records' words, or their owner's id, stay in memory.
    this.terms.forget();
    this.policyRows.forget();
    this.scripts.clear();
    if (removed.length > 0 || resumed) {
      this.db.prepare(`INSERT INTO memories_fts (memories_fts) VALUES ('optimize')`).run();
      this.graph.scrub(removed.map((r) => r.rowid));
      const rebuilt = resumed || this.graph.removedShare > COMPACT_SHARE;
      if (rebuilt) this.rebuildGraph();
      this.saveGraph();
      if (!rebuilt) {
        // A row without a vector left no vector bytes to look for (an empty pattern would match anywhere). The
        // graph holds the row's vector in its scalar type (see graphVectorBytes), so those are the bytes looked for.
        const needles = removed
          .filter((r) => r.vector.byteLength > 0)
          .map((r) => ({ id: String(r.rowid), bytes: graphVectorBytes(this.vectorOf(r.vector), this.graph.quantization) }));
        const report = await scanFiles([this.files.graph], needles);
        if (report.findings.length > 0) {
          this.rebuildGraph();
          this.saveGraph();
        }
      }
      this.stmt(`UPDATE partition_state SET value = 0 WHERE key = 'purge_pending'`).run();
    }
    this.checkpoint();
  }

  /** Writes the counted uses, and saves the graph if vectors were added since the last save. */
  flush(): void {
    this.writeUsage();
    // An unloaded graph is unchanged since its file was saved (or is rebuilt from the rows when it is next loaded).
    if (!this.graphLoaded) return;
    if (this.addedSinceSave > 0 || this.savedGraph()?.generation !== this.state('generation')) this.saveGraph();
  }

  /** Bytes this partition holds in memory, roughly: its graph, SQLite's page cache and the rows' filter columns. */
  get memoryBytes(): number {
    return (this.graphLoaded ? this.vectorGraph.memoryBytes : 0) + PAGE_CACHE_BYTES + this.policyRows.memoryBytes;
  }

  close(): void {
    this.flush();
    this.checkpoint();
    this.db.close();
    this.vectorGraph.release();
  }

  /** Closes the file without writing anything (a corrupt partition, or one about to be deleted); never throws. */
  abandon(): void {
    this.vectorGraph.release();
    try {
      this.db.close();
    } catch {
      // Already unusable: the caller deletes or quarantines it.
    }
  }

  /** Moves the WAL into the database file and truncates it, so no old page (a purged record's) stays in the WAL. */
  private checkpoint(): void {
    const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    // Only this connection uses the file; a busy checkpoint would leave old pages behind, so it must not pass silently.
    if (result && result.busy !== 0) throw new Error('the index WAL could not be checkpointed (busy)');
  }

  static deleteFiles(files: PartitionFiles): void {
    for (const path of [files.db, `${files.db}-wal`, `${files.db}-shm`, files.graph, `${files.graph}.tmp`]) {
      if (existsSync(path)) rmSync(path, { force: true });
    }
  }

  /** `vector`: the row's quantised vector (see `quantise`), absent while it waits for one. */
  private insertRow(record: MemoryRecord, vector: Buffer | undefined, txFrom: number, now: number): number {
    const { lastInsertRowid } = this.stmt(
      `INSERT INTO memories (id, version, tx_from, tx_to, tokens, fact_key, kind, status, sensitivity_rank, owner, project, retention_class, purpose_set, lineage_set, scope_set, valid_from, valid_to, recorded_at, expires_at, subject, session, record, vector, vector_model, pending_since)
       VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      record.id,
      record.version,
      txFrom,
      // Counted by the embedding stage's write (`setVectors`), off the projection's path, when no vector comes now.
      vector ? countTokens(record.content.text) : null,
      factKeyOf(record),
      record.kind,
      record.status,
      SENSITIVITY_RANK[record.policy.sensitivity],
      record.policy.owner,
      record.policy.project ?? null,
      record.retention.class,
      purposeSet(record.policy.purposes),
      lineageSet(record),
      scopeSet(record),
      millis(record.validFrom, 'validFrom'),
      record.validTo === null ? null : millis(record.validTo, 'validTo'),
      millis(record.recordedAt, 'recordedAt'),
      record.retention.expiresAt === null ? null : millis(record.retention.expiresAt, 'expiresAt'),
      record.subject,
      record.session ?? null,
      this.rowJson(record),
      vector ?? EMPTY_BLOB,
      vector ? this.options.model : null,
      vector ? null : now,
    );
    const rowid = Number(lastInsertRowid);
    this.insertText(rowid, record);
    for (const input of lineageInputs(record))
      this.stmt('INSERT OR IGNORE INTO memory_inputs (input, row) VALUES (?, ?)').run(input, rowid);
    for (const key of scopeKeys(record)) this.stmt('INSERT OR IGNORE INTO scope_keys (key, row) VALUES (?, ?)').run(key, rowid);
    return rowid;
  }

  /** The record's BM25 terms, joined by spaces, so FTS5's unicode61 splits exactly there. */
  private insertText(rowid: number, record: MemoryRecord): void {
    this.stmt('INSERT INTO memories_fts (rowid, body) VALUES (?, ?)').run(rowid, documentTerms(record, this.options.text).join(' '));
  }

  /**
   * A partition whose FTS rows were made with another analysis (an older
   * release, or other `text` options) would match stemmed queries against
   * unstemmed words, silently: its FTS table is dropped and every row's terms
   * (past versions too, which knownAsOf queries reach) derived again from the
   * stored records, in one transaction with the new analysis code. Dropping
   * the table (with secure_delete on) rather than deleting its rows leaves no
   * old term lists behind. A file whose FTS table still stores its text (from
   * before it was contentless) is rebuilt the same way, so the copy goes.
   */
  private deriveTextIfStale(): void {
    const code = this.options.formats
      ? analysisCodeAt(this.options.text, this.options.formats.tokenisation)
      : documentAnalysisCode(this.options.text);
    if (this.state('text_analysis') === code && !ftsStoresContent(this.db)) return;
    this.db.transaction(() => {
      this.db.exec('DROP TABLE IF EXISTS memories_vocab; DROP TABLE memories_fts;');
      this.db.exec(TENANT_FTS_SCHEMA);
      const insert = this.db.prepare('INSERT INTO memories_fts (rowid, body) VALUES (?, ?)');
      const page = this.db.prepare(`SELECT rowid, ${RECORD_COLUMNS} FROM memories WHERE rowid > ? ORDER BY rowid LIMIT 1000`);
      // Paged: better-sqlite3 allows no write while a statement is still being iterated.
      for (let after = 0, rows: ({ rowid: number } & RecordRow)[]; (rows = page.all(after) as typeof rows).length > 0;) {
        for (const row of rows) insert.run(row.rowid, documentTerms(this.recordOf(row), this.options.text).join(' '));
        after = rows[rows.length - 1].rowid;
      }
      this.db.prepare(`INSERT OR REPLACE INTO partition_state (key, value) VALUES ('text_analysis', ?)`).run(code);
    })();
    this.cache.clear();
  }

  /**
   * Refuses a partition written in a newer rows format than this build's
   * (`user_version`), rather than misreading it; returns whether the file is
   * new (no table yet), so it is stamped once created.
   */
  private checkRowsFormat(supported: number): boolean {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    if (version > supported) throw new FormatTooNew('indexRows', version, 'index partition', supported);
    return version === 0 && !this.db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'memories'`).get();
  }

  /**
   * The vectors' storage format (`partition_state.vectors_format`; files from
   * before it stored float32 BLOBs, format 1). A newer one is refused. Format
   * 1 rows are quantised in place into format 2 (see `quantise`), keeping
   * every vector. Any other older one is migrated in place too: vectors are
   * derived data of the stored records, so current rows go back to waiting
   * for a vector (the embedding stage makes them again, BM25 answers
   * meanwhile). Either way the graph is rebuilt from the rows.
   */
  private migrateVectorsFormat(supported: number, fresh: boolean): void {
    const recorded = this.state('vectors_format');
    // Files from before the marker hold float32 BLOBs: format 1.
    const stored = recorded ?? (fresh ? supported : LEGACY_VECTORS_FORMAT);
    if (stored > supported) throw new FormatTooNew('vectors', stored, 'index partition', supported);
    if (recorded === supported) return;
    this.db.transaction(() => {
      if (stored === LEGACY_VECTORS_FORMAT && supported === QUANTISED_VECTORS_FORMAT) {
        this.quantiseRows();
        this.bumpGeneration();
      } else if (stored < supported) {
        this.db
          .prepare(
            `UPDATE memories SET vector = ?, vector_model = NULL, pending_since = ? WHERE vector_model IS NOT NULL AND tx_to IS NULL`,
          )
          .run(EMPTY_BLOB, Date.now());
        this.db.prepare(`UPDATE memories SET vector = ?, vector_model = NULL WHERE tx_to IS NOT NULL`).run(EMPTY_BLOB);
        this.bumpGeneration();
      }
      this.db.prepare(`INSERT OR REPLACE INTO partition_state (key, value) VALUES ('vectors_format', ?)`).run(supported);
    })();
  }

  /** Rewrites every row's float32 vector quantised (format 1 to 2), past versions too; paged like deriveTextIfStale. */
  private quantiseRows(): void {
    const update = this.db.prepare('UPDATE memories SET vector = ? WHERE rowid = ?');
    const page = this.db.prepare(`SELECT rowid, vector FROM memories WHERE rowid > ? AND length(vector) > 0 ORDER BY rowid LIMIT 1000`);
    for (let after = 0, rows: { rowid: number; vector: Buffer }[]; (rows = page.all(after) as typeof rows).length > 0;) {
      for (const row of rows) update.run(quantise(fromBlob(row.vector)), row.rowid);
      after = rows[rows.length - 1].rowid;
    }
  }

  /** The vector a row's BLOB holds (quantised, or float32 in a row not yet converted). */
  private vectorOf(blob: Buffer): Float32Array {
    return dequantise(blob, this.options.dimensions);
  }

  private deleteRow(rowid: number): void {
    this.stmt('DELETE FROM memories_fts WHERE rowid = ?').run(rowid);
    // No index on `row`: the row's own inputs name its entries (before the row goes).
    this.stmt(
      `DELETE FROM memory_inputs WHERE row = @row AND input IN (
         SELECT j.value FROM memories m, json_each(m.record, '$.provenance.parentIds') j WHERE m.rowid = @row
         UNION SELECT j.value FROM memories m, json_each(m.record, '$.provenance.sourceEventIds') j WHERE m.rowid = @row)`,
    ).run({ row: rowid });
    // Nor on `row` here: the row's scope_set names its keys.
    const scope = this.stmt('SELECT scope_set FROM memories WHERE rowid = ?').pluck().get(rowid) as string | null | undefined;
    for (const key of keysOfScopeSet(scope ?? '')) this.stmt('DELETE FROM scope_keys WHERE key = ? AND row = ?').run(key, rowid);
    this.stmt('DELETE FROM memories WHERE rowid = ?').run(rowid);
  }

  /**
   * The saved graph is trusted only if it was saved at the partition's current
   * generation (otherwise it may miss rows or, after a purge that crashed
   * before the rewrite, still hold purged vectors) and its bytes are exactly
   * those written then (usearch's loader trusts the file: a truncated or
   * overwritten one can abort the process). Anything else is deleted and the
   * graph rebuilt from the rows, which are the truth.
   */
  /**
   * The graph, loaded from its file (or rebuilt from the rows) on first use:
   * a partition used only for text (rows projected before their vectors,
   * BM25 searches, reads) holds no graph in memory.
   */
  private get graph(): VectorGraph {
    this.loadGraph();
    return this.vectorGraph;
  }

  /** Whether the graph is in memory (the budget counts it only then). */
  get holdsGraph(): boolean {
    return this.graphLoaded;
  }

  private loadGraph(): void {
    if (this.graphLoaded) return;
    this.graphLoaded = true;
    try {
      this.openGraph();
    } catch (error) {
      this.graphLoaded = false;
      this.vectorGraph.reset();
      throw error;
    }
  }

  private openGraph(): void {
    const saved = this.savedGraph();
    // A graph built with another ef_construction (files from before it was recorded were built with 16) is rebuilt.
    const builtWith = this.state('graph_expansion_add') ?? LEGACY_EXPANSION_ADD;
    // So is one of another scalar type (files from before it was recorded held f32): usearch would load it as it is.
    const scalarBytes = this.state('graph_scalar_bytes') ?? SCALAR_BYTES.f32;
    if (
      saved &&
      saved.generation === this.state('generation') &&
      builtWith === this.graph.expansionAdd &&
      scalarBytes === SCALAR_BYTES[this.graph.quantization] &&
      sameFile(this.files.graph, saved)
    ) {
      if (this.graph.load(this.files.graph, saved.removed) && this.graph.size === saved.nodes) {
        // A file written past the compaction share (before it existed) is rebuilt rather than kept.
        if (this.graph.removedShare <= COMPACT_SHARE) return;
      }
    }
    rmSync(this.files.graph, { force: true });
    this.rebuildGraph();
    this.saveGraph();
  }

  private savedGraph(): GraphFile | undefined {
    return this.stmt('SELECT generation, bytes, sha256, nodes, removed FROM graph_file WHERE one = 1').get() as GraphFile | undefined;
  }

  private rebuildGraph(): void {
    this.graph.reset();
    const batch: { rowid: number; vector: Float32Array }[] = [];
    const flushBatch = () => {
      this.graph.add(
        batch.map((b) => b.rowid),
        batch.map((b) => b.vector),
      );
      batch.length = 0;
    };
    // Only vectors of the configured model: a graph never mixes two models (a stale partition's graph stays empty).
    if (!this.modelCurrent) return;
    for (const row of this.stmt('SELECT rowid, vector FROM memories WHERE vector_model = ? ORDER BY rowid').iterate(
      this.options.model,
    ) as IterableIterator<{
      rowid: number;
      vector: Buffer;
    }>) {
      batch.push({ rowid: row.rowid, vector: this.vectorOf(row.vector) });
      if (batch.length === 10_000) flushBatch();
    }
    if (batch.length > 0) flushBatch();
  }

  private saveGraph(): void {
    this.graph.save(this.files.graph);
    this.stmt(
      `INSERT INTO graph_file (one, generation, bytes, sha256, nodes, removed) VALUES (1, ?, ?, ?, ?, ?)
       ON CONFLICT (one) DO UPDATE SET generation = excluded.generation, bytes = excluded.bytes, sha256 = excluded.sha256,
         nodes = excluded.nodes, removed = excluded.removed`,
    ).run(this.state('generation'), statSync(this.files.graph).size, fileDigest(this.files.graph), this.graph.size, this.graph.removed);
    this.stmt(`INSERT OR REPLACE INTO partition_state (key, value) VALUES ('graph_expansion_add', ?)`).run(this.graph.expansionAdd);
    this.stmt(`INSERT OR REPLACE INTO partition_state (key, value) VALUES ('graph_scalar_bytes', ?)`).run(
      SCALAR_BYTES[this.graph.quantization],
    );
    this.addedSinceSave = 0;
  }

  private bumpGeneration(): void {
    this.stmt(`UPDATE partition_state SET value = value + 1 WHERE key = 'generation'`).run();
  }

  private state(key: 'generation' | 'purge_pending'): number;
  private state(key: 'text_analysis' | 'graph_expansion_add' | 'graph_scalar_bytes' | 'vectors_format'): number | undefined;
  private state(
    key: 'generation' | 'purge_pending' | 'text_analysis' | 'graph_expansion_add' | 'graph_scalar_bytes' | 'vectors_format',
  ): number | undefined {
    return (this.stmt('SELECT value FROM partition_state WHERE key = ?').get(key) as { value: number } | undefined)?.value;
  }

  /** Prepared statements by SQL text; filter SQL varies only with list lengths, so the cache stays small. */
  private stmt(sql: string): Database.Statement {
    let statement = this.cache.get(sql);
    if (!statement) {
      if (this.cache.size >= 256) this.cache.clear();
      statement = this.db.prepare(sql);
      this.cache.set(sql, statement);
    }
    return statement;
  }
}

/** The `vector` of a row waiting for its vector (the column is NOT NULL in files from before). */
const EMPTY_BLOB = Buffer.alloc(0);

/** The page size of a new partition file. */
export const PAGE_SIZE = 16_384;

/** The WAL length after which a partition is checkpointed. */
const WAL_CHECKPOINT_BYTES = 40 * 1024 * 1024;

/** Distinct ids whose counted uses wait in memory before they are written together (see recordUsage). */
const USAGE_BATCH = 1_024;

/** SQLite's default page cache per connection (cache_size -2000: 2,000 KiB), counted as each open partition's floor. */
const PAGE_CACHE_BYTES = 2_048_000;

function sameFile(path: string, saved: GraphFile): boolean {
  if (!existsSync(path) || statSync(path).size !== saved.bytes) return false;
  return fileDigest(path) === saved.sha256;
}

/** SHA-256 of a file, read in chunks (a graph file can be hundreds of MB). */
function fileDigest(path: string): string {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(4 * 1024 * 1024);
  const fd = openSync(path, 'r');
  try {
    for (let read; (read = readSync(fd, buffer, 0, buffer.length, null)) > 0;) hash.update(buffer.subarray(0, read));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

interface UsageColumns {
  retrieved: number | null;
  adopted: number | null;
  last_used_at: number | null;
}

/** The record with its usage counts from the side table (the stored record keeps those of its writing). */
function withUsage(record: MemoryRecord, usage: UsageColumns): MemoryRecord {
  if (usage.retrieved === null) return record;
  return {
    ...record,
    usage: {
      retrieved: record.usage.retrieved + usage.retrieved,
      adopted: record.usage.adopted + (usage.adopted ?? 0),
      lastUsedAt: usage.last_used_at === null ? record.usage.lastUsedAt : new Date(usage.last_used_at).toISOString(),
    },
  };
}

const isUnused = (usage: MemoryRecord['usage']) => usage.retrieved === 0 && usage.adopted === 0 && usage.lastUsedAt === null;

/** A partition's embedding lag: pending rows, when the oldest became pending (epoch ms), and whether its model is current. */
export interface PartitionLag {
  pending: number;
  oldest: number | null;
  modelCurrent: boolean;
}

/** Up to `limit` current rows of a partition file waiting for a vector, oldest pending first. */
export function pendingRows(db: Database.Database, limit: number): PendingEmbedding[] {
  return db
    .prepare(
      `SELECT id, version, json_extract(record, '$.content.text') AS text FROM memories
       WHERE vector_model IS NULL AND tx_to IS NULL ORDER BY pending_since, rowid LIMIT ?`,
    )
    .all(limit) as PendingEmbedding[];
}

/** How many current rows of a partition file wait for a vector, and since when the oldest (epoch ms). */
export function lagRow(db: Database.Database): { pending: number; oldest: number | null } {
  const row = db
    .prepare('SELECT count(*) AS n, min(pending_since) AS oldest FROM memories WHERE vector_model IS NULL AND tx_to IS NULL')
    .get() as { n: number; oldest: number | null };
  return { pending: row.n, oldest: row.oldest };
}

/** The model whose vectors a partition file holds, or undefined when it names none yet. */
export function partitionModelOf(db: Database.Database): string | undefined {
  return (db.prepare('SELECT model FROM vector_model WHERE one = 1').get() as { model: string } | undefined)?.model;
}

/**
 * The model whose vectors a partition file holds, when the file is as this
 * build writes it (rows and vectors formats current, a model recorded), so
 * that it can be read without opening it as a partition; undefined when the
 * open would first convert it (a vectors format change makes rows pending).
 */
export function currentModelOf(db: Database.Database, formats: { indexRows: number; vectors: number }): string | undefined {
  if (db.pragma('user_version', { simple: true }) !== formats.indexRows) return undefined;
  const vectors = db.prepare(`SELECT value FROM partition_state WHERE key = 'vectors_format'`).pluck().get() as number | undefined;
  return vectors === formats.vectors ? partitionModelOf(db) : undefined;
}

/**
 * The varints of an FTS5 record (its totals, a docsize): SQLite's format,
 * big-endian groups of seven bits, a set high bit meaning more follow, the
 * ninth byte whole.
 */
export function readVarints(bytes: Buffer | undefined): number[] {
  const values: number[] = [];
  if (!bytes) return values;
  for (let at = 0; at < bytes.length;) {
    let value = 0;
    for (let i = 0; ; i++) {
      const byte = bytes[at++];
      if (i === 8) {
        value = value * 256 + byte;
        break;
      }
      value = value * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0 || at >= bytes.length) break;
    }
    values.push(value);
  }
  return values;
}
