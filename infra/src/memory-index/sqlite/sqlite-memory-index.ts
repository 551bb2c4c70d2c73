import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import {
  DEFAULT_TEXT_ANALYSIS,
  FORMAT_VERSIONS,
  FormatTooNew,
  IndexPartitionCorrupt,
  fuse,
  MINMAX_MIN_CANDIDATES,
  type ScriptGroup,
  type Fusion,
  liftPool,
  rankedPool,
  type CheckpointStore,
  type EmbeddedVector,
  type EmbeddingLag,
  type ErasedProbe,
  type HybridQuery,
  type PendingEmbedding,
  type IndexFilter,
  type IndexedMemory,
  type Leftovers,
  type NeighbourMemory,
  type Neighbours,
  type MemoryIndex,
  type LineageEntry,
  type ListQuery,
  type MemoryRecord,
  type SearchHit,
  type TextAnalysis,
  type StoredUsage,
} from '@elma/domain';
import { compileFilter } from './filter-sql';
import { META_SCHEMA } from './schema';
import { TenantPartition, currentModelOf, lagRow, pendingRows, type PartitionFiles } from './tenant-partition';
import { DEFAULT_QUANTIZATION, storedVectorForms, type VectorGraphOptions } from './vector-graph';
import { cosine, norm } from './vectors';

export interface SqliteMemoryIndexOptions {
  /** Folder for `tenant-<tenant>.db`, `tenant-<tenant>.usearch` and `meta.db`; created if missing. */
  dir: string;
  /** Vector length every upsert and query must have. */
  dimensions: number;
  /**
   * The embedder model (id with its version) whose vectors the dense route
   * searches. A partition created under another model answers the dense
   * route with nothing until it is reindexed (see `embeddingLag`).
   */
  model?: string;
  graph?: VectorGraphOptions;
  /** Rewrite a tenant's graph file after this many added vectors (it is also written on close and purge). */
  persistEveryRows?: number;
  /**
   * Memory the open partitions may hold together (graphs and page caches),
   * in bytes. Past it the least recently used partitions are closed (their
   * graphs written first); a closed partition reopens on its next use.
   */
  memoryBudgetBytes?: number;
  /**
   * What the BM25 route indexes and queries with (`DEFAULT_TEXT_ANALYSIS` for
   * what is not given). A partition indexed with other document terms has
   * them derived again from its records when it is opened.
   */
  text?: Partial<TextAnalysis>;
  /**
   * The formats this build writes (`FORMAT_VERSIONS` unless given: tests
   * simulate another build). A file of a newer format is refused; new
   * partitions are stamped with `indexRows`.
   */
  formats?: { indexMeta: number; indexRows: number; vectors: number; tokenisation: number };
}

/** The model name of an index whose options name none. */
export const UNNAMED_MODEL = 'unnamed';

/** The longest uses counted by recall wait in memory before they are written. */
const USAGE_DELAY_MS = 1_000;
/** Rows a storage count reads before it lets other calls run (about 10 ms of work). */
const STORED_USAGE_PAGE = 5_000;

/** Default memory budget of the open partitions: 512 MiB. */
export const DEFAULT_INDEX_MEMORY_BYTES = 512 * 1024 * 1024;

/** SQLite's answer for a file that is damaged or not a database at all (better-sqlite3's `code`). */
const CORRUPTION = /^SQLITE_(CORRUPT|NOTADB)/;

function isCorruption(error: unknown): boolean {
  return error instanceof Database.SqliteError && CORRUPTION.test(error.code);
}

/** Tenant ids become file names, so only a conservative alphabet is accepted. */
const TENANT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/**
 * The embedded memory index: one SQLite file plus one usearch HNSW graph per
 * tenant, so partitions share nothing and a tenant can be dropped by deleting
 * its files. Checkpoints live in `meta.db` beside them.
 *
 * Open partitions are kept in least-recently-used order within a memory
 * budget. All partition work is synchronous except a purge's file scan, so a
 * partition is only ever closed between two calls, never during one; a
 * purging partition is pinned until its purge ends, and iterators fetch the
 * partition again for every page.
 *
 * A tenant whose files SQLite finds corrupt is quarantined (kept in `meta.db`,
 * so a restart does not forget it): its calls fail with
 * `IndexPartitionCorrupt` without touching the files, while other tenants
 * carry on. `dropTenant` lifts the quarantine.
 */
export class SqliteMemoryIndex implements MemoryIndex, CheckpointStore {
  /** Open partitions, least recently used first (a Map keeps insertion order; a use re-inserts). */
  private readonly partitions = new Map<string, TenantPartition>();
  /** Tenants with a purge in progress, by count: never evicted meanwhile. */
  private readonly pinned = new Map<string, number>();
  private readonly quarantine = new Set<string>();
  private readonly meta: Database.Database;
  private closed = false;
  /** Writes the uses counted in memory once it fires (see recordUsage). */
  private usageTimer: NodeJS.Timeout | undefined;
  /** Partitions closed to stay within the memory budget, since this index was opened. */
  evictions = 0;

  static async open(options: SqliteMemoryIndexOptions): Promise<SqliteMemoryIndex> {
    return new SqliteMemoryIndex(options);
  }

  constructor(private readonly options: SqliteMemoryIndexOptions) {
    if (!Number.isInteger(options.dimensions) || options.dimensions < 1) throw new RangeError('dimensions must be a positive integer');
    mkdirSync(options.dir, { recursive: true });
    this.meta = new Database(join(options.dir, 'meta.db'));
    const metaFormat = options.formats?.indexMeta ?? FORMAT_VERSIONS.indexMeta;
    const metaVersion = this.meta.pragma('user_version', { simple: true }) as number;
    if (metaVersion > metaFormat) {
      this.meta.close();
      throw new FormatTooNew('indexMeta', metaVersion, 'index/meta.db', metaFormat);
    }
    this.meta.pragma('journal_mode = WAL');
    // A lost checkpoint after a power cut only means replaying a batch (idempotent); no fsync per save.
    this.meta.pragma('synchronous = NORMAL');
    this.meta.exec(META_SCHEMA);
    // The schema above is the same in files from before versions (0): stamping is their whole migration.
    if (metaVersion < metaFormat) this.meta.pragma(`user_version = ${Math.trunc(metaFormat)}`);
    for (const { tenant } of this.meta.prepare('SELECT tenant FROM quarantined_tenants').all() as { tenant: string }[])
      this.quarantine.add(tenant);
  }

  async upsert(tenant: string, memories: IndexedMemory[]): Promise<void> {
    if (memories.length === 0) return;
    for (const { record, vector } of memories) {
      if (record.tenant !== tenant) throw new Error(`memory ${record.id} belongs to another tenant than ${tenant}`);
      if (vector) this.checkVector(vector, `memory ${record.id}`);
    }
    this.guard(tenant, () => this.partition(tenant, true)!.upsert(memories));
    // The graph grew: the budget may now be exceeded.
    this.enforceBudget(tenant);
  }

  async get(tenant: string, id: string): Promise<IndexedMemory | undefined> {
    return this.guard(tenant, () => this.partition(tenant, false)?.get(id));
  }

  async search(query: HybridQuery): Promise<SearchHit[]> {
    const hits = this.guard(query.tenant, () => this.searchPartition(query));
    // The dense route may have loaded the tenant's graph: the budget may now be exceeded.
    if (query.vector) this.enforceBudget(query.tenant);
    return hits;
  }

  private searchPartition(query: HybridQuery): SearchHit[] {
    const partition = this.partition(query.tenant, false);
    const filter = compileFilter(query.filter);
    if (!partition || !filter || query.limit <= 0) return [];
    if (query.vector) this.checkVector(query.vector, 'query vector');

    // Smoothing and the conversation lift rank a pool wider than `limit` (`HybridQuery`).
    const smoothing = query.smoothing && query.smoothing.factor > 0 ? query.smoothing : undefined;
    const conversation = query.conversation && query.conversation.weight > 0 ? query.conversation : undefined;
    const pool = rankedPool(query);
    // Each route returns more than the pool so that fusion can promote a hit both routes agree on.
    const depth = Math.min(Math.max(pool * 2, 20), 1_000);
    // The scope's rows are read once, for both routes and smoothing.
    const scoped = partition.scopedRowsOf(query.filter);
    const textRanking = query.text.trim() ? partition.searchText(query.text, query.filter, depth, scoped) : [];
    const vectorRanking = query.vector ? partition.searchVector(query.vector, query.filter, filter, depth, scoped) : [];

    const fused = fuse(
      {
        bm25: textRanking.map((t) => ({ id: String(t.rowid), score: t.score })),
        dense: vectorRanking.map((v) => ({ id: String(v.rowid), score: v.cosine })),
      },
      query.fusion,
      scriptsForFusion(partition, query.fusion, textRanking, vectorRanking),
    ).slice(0, pool);
    const byRowid = new Map(fused.map((f) => [Number(f.id), f]));
    // Ranked on row ids first, so that only the records returned are read.
    const smoothed: { rowid: number; score: number; lift?: number; neighbourOf?: number }[] = smoothing
      ? partition.smoothed(
          fused.map((f) => ({ rowid: Number(f.id), score: f.score })),
          query.filter,
          filter,
          smoothing.factor,
          scoped,
        )
      : fused.map((f) => ({ rowid: Number(f.id), score: f.score }));
    const ranked: { rowid: number; score: number; lift?: number; neighbourOf?: number; conversationLift?: number }[] = (
      conversation
        ? liftPool(
            smoothed.map((s) => ({ ...s, id: String(s.rowid) })),
            (ids) => partition.conversations(ids.map(Number)),
            conversation,
          )
        : smoothed
    ).slice(0, query.limit);
    const rows = partition.rows(ranked.map((r) => r.rowid));
    const bm25Score = new Map(textRanking.map((t) => [t.rowid, t.score]));
    const queryNorm = query.vector ? norm(query.vector) : 0;

    const hits: SearchHit[] = [];
    for (const { rowid, score, lift, neighbourOf, conversationLift } of ranked) {
      const row = rows.get(rowid);
      if (!row) continue;
      const hit: SearchHit = { record: row.record, score };
      // The lender's id is known when it is among the rows returned (it scores at least what it lent).
      if (lift !== undefined)
        hit.smoothing = { lift, neighbourOf: neighbourOf === undefined ? undefined : rows.get(neighbourOf)?.record.id };
      if (conversationLift !== undefined) hit.conversation = { lift: conversationLift };
      if (row.vector) hit.vector = row.vector;
      if (row.tokens !== undefined) hit.tokens = row.tokens;
      // A neighbour that joined by smoothing was no hit of either route: it has no ranks and no similarity.
      const route = byRowid.get(rowid);
      if (route) hit.contributions = route.contributions;
      if (route?.bm25Rank !== undefined) {
        hit.bm25Rank = route.bm25Rank;
        hit.bm25Score = bm25Score.get(rowid);
      }
      if (route?.vectorRank !== undefined) hit.vectorRank = route.vectorRank;
      if (route && query.vector && row.vector) hit.cosine = cosine(query.vector, row.vector, queryNorm);
      hits.push(hit);
    }
    return hits;
  }

  async neighbours(tenant: string, ids: string[], filter: IndexFilter): Promise<Neighbours[]> {
    return this.guard(tenant, () => {
      const partition = this.partition(tenant, false);
      const where = compileFilter(filter);
      if (!partition || !where || ids.length === 0) return [];
      const found = partition.neighbours(ids, filter, where);
      const rows = partition.rows(found.flatMap((f) => [f.previous, f.next].filter((r): r is number => r !== undefined)));
      const memory = (rowid: number | undefined): NeighbourMemory | undefined => {
        const row = rowid === undefined ? undefined : rows.get(rowid);
        return (
          row && {
            record: row.record,
            ...(row.vector ? { vector: row.vector } : {}),
            ...(row.tokens !== undefined ? { tokens: row.tokens } : {}),
          }
        );
      };
      return found.map(({ id, previous, next }) => {
        const before = memory(previous);
        const after = memory(next);
        return { id, ...(before ? { previous: before } : {}), ...(after ? { next: after } : {}) };
      });
    });
  }

  async list(query: ListQuery): Promise<MemoryRecord[]> {
    return this.guard(query.tenant, () => {
      const partition = this.partition(query.tenant, false);
      const where = compileFilter(query.filter);
      if (!partition || !where || query.limit <= 0) return [];
      return partition.list(where, query);
    });
  }

  async versions(tenant: string, id: string): Promise<MemoryRecord[]> {
    return this.guard(tenant, () => this.partition(tenant, false)?.versions(id) ?? []);
  }

  /** The graph's and the rows' byte forms of a vector (`storedVectorForms` of vector-graph). */
  storedVectorForms(vector: Float32Array): Buffer[] {
    return storedVectorForms(vector, this.options.graph?.quantization ?? DEFAULT_QUANTIZATION);
  }

  /**
   * A quarantined partition cannot be purged record by record, but it must
   * not keep the records' plaintext either: its files are deleted whole (the
   * log rebuilds the rest) and it stays quarantined until that rebuild, so
   * reads keep failing loudly rather than answering from an empty partition.
   */
  async purge(tenant: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    this.pinned.set(tenant, (this.pinned.get(tenant) ?? 0) + 1);
    try {
      await this.guard(tenant, () => this.partition(tenant, false)?.purge(ids));
    } catch (error) {
      const corrupt = this.corruptionOf(tenant, error);
      if (!corrupt) throw error;
      TenantPartition.deleteFiles(this.files(tenant));
    } finally {
      const pins = this.pinned.get(tenant)! - 1;
      if (pins === 0) this.pinned.delete(tenant);
      else this.pinned.set(tenant, pins);
    }
  }

  async pendingEmbeddings(tenant: string, limit: number): Promise<PendingEmbedding[]> {
    if (limit <= 0) return [];
    return this.guard(
      tenant,
      () =>
        this.peek(
          tenant,
          (partition) => partition.pendingEmbeddings(limit),
          (db, modelCurrent) => (modelCurrent ? pendingRows(db, limit) : []),
        ) ?? [],
    );
  }

  async setVectors(tenant: string, items: EmbeddedVector[]): Promise<void> {
    if (items.length === 0) return;
    for (const item of items) this.checkVector(item.vector, `vector of memory ${item.id}`);
    this.guard(tenant, () => this.partition(tenant, false)?.setVectors(items));
    this.enforceBudget(tenant);
  }

  /**
   * Summed over the tenants (or of one): every partition is opened for it, so
   * it is for /health and the bench, not for a hot path. A quarantined
   * tenant counts nothing (its health entry says why).
   */
  async embeddingLag(tenant?: string): Promise<EmbeddingLag> {
    const lag: EmbeddingLag = { pending: 0, reindexNeeded: [] };
    let oldest: number | null = null;
    for (const name of tenant === undefined ? await this.tenants() : [tenant]) {
      if (this.quarantine.has(name)) continue;
      const one = this.guard(name, () =>
        this.peek(
          name,
          (partition) => partition.embeddingLag(),
          (db, modelCurrent) => ({ ...lagRow(db), modelCurrent }),
        ),
      );
      if (!one) continue;
      lag.pending += one.pending;
      if (one.oldest !== null && (oldest === null || one.oldest < oldest)) oldest = one.oldest;
      if (!one.modelCurrent) lag.reindexNeeded.push(name);
    }
    if (oldest !== null) lag.oldestPendingAt = new Date(oldest).toISOString();
    return lag;
  }

  async count(tenant: string): Promise<number> {
    return this.guard(tenant, () => this.partition(tenant, false)?.count() ?? 0);
  }

  /**
   * Counted in pages of STORED_USAGE_PAGE rows, letting other calls run between them: a count of a large
   * tenant takes seconds, which the recalls and writes of every tenant would otherwise wait out.
   */
  async storedUsage(tenant: string): Promise<StoredUsage> {
    const usage: StoredUsage = { memories: 0, bytes: 0 };
    for (let after = 0; ; await new Promise((resolve) => setImmediate(resolve))) {
      const page = this.guard(tenant, () => this.partition(tenant, false)?.storedUsageAfter(after, STORED_USAGE_PAGE));
      if (!page || page.last === null) return usage;
      usage.memories += page.memories;
      usage.bytes += page.bytes;
      after = page.last;
    }
  }

  records(tenant: string): AsyncIterable<MemoryRecord> {
    return this.batched(tenant, (partition, after) =>
      partition.recordsAfter(after, 1_000).map((r) => ({ rowid: r.rowid, item: r.record })),
    );
  }

  lineage(tenant: string): AsyncIterable<LineageEntry> {
    return this.batched(tenant, (partition, after) => partition.lineageAfter(after, 5_000).map((r) => ({ rowid: r.rowid, item: r.entry })));
  }

  async lineageOf(tenant: string, match: { ids?: readonly string[]; subjects?: readonly string[] }): Promise<LineageEntry[]> {
    const { ids = [], subjects = [] } = match;
    if (ids.length + subjects.length === 0) return [];
    return this.guard(tenant, () => this.partition(tenant, false)?.lineageOf(ids, subjects) ?? []);
  }

  async leftovers(tenant: string, probes: ErasedProbe[], options: { minCosine: number }): Promise<Leftovers> {
    const none: Leftovers = { rows: [], terms: [], vectors: [], sharedText: [] };
    if (probes.length === 0) return none;
    const found = this.guard(tenant, () => this.partition(tenant, false)?.leftovers(probes, options.minCosine) ?? none);
    // A vector probe loads the graph.
    this.enforceBudget(tenant);
    return found;
  }

  /** Pages through a partition by rowid, so no statement stays open across the consumer's awaits. */
  private async *batched<T>(
    tenant: string,
    page: (partition: TenantPartition, after: number) => { rowid: number; item: T }[],
  ): AsyncIterable<T> {
    for (let after = 0; ;) {
      const batch = this.guard(tenant, () => {
        const partition = this.partition(tenant, false);
        return partition ? page(partition, after) : [];
      });
      if (batch.length === 0) return;
      for (const row of batch) yield row.item;
      after = batch[batch.length - 1].rowid;
    }
  }

  async currentFacts(tenant: string, factKey: string): Promise<MemoryRecord[]> {
    return this.guard(tenant, () => this.partition(tenant, false)?.currentFacts(factKey) ?? []);
  }

  /** Counted in memory by the partition and written in batches: within USAGE_DELAY_MS, or sooner once many wait. */
  async recordUsage(tenant: string, ids: string[], use: 'retrieved' | 'adopted', at: string): Promise<void> {
    if (ids.length === 0) return;
    this.guard(tenant, () => this.partition(tenant, false)?.recordUsage(ids, use, Date.parse(at)));
    this.scheduleUsageWrite(USAGE_DELAY_MS);
  }

  private scheduleUsageWrite(delay: number): void {
    this.usageTimer ??= setTimeout(() => {
      this.usageTimer = undefined;
      this.writeStaleUsage();
    }, delay).unref();
  }

  /**
   * Writes the uses that have waited USAGE_DELAY_MS (a crash loses at most
   * that much of them); uses counted since the last batch wait on.
   */
  private writeStaleUsage(): void {
    if (this.closed) return;
    let next = Infinity;
    for (const [tenant, partition] of [...this.partitions]) {
      const since = partition.usageWaitingSince;
      if (since === undefined) continue;
      const wait = since + USAGE_DELAY_MS - Date.now();
      if (wait > 0) {
        next = Math.min(next, wait);
        continue;
      }
      try {
        this.guard(tenant, () => partition.writeUsage());
      } catch {
        // A corrupt partition is quarantined by guard (and its counts dropped with it); a full disk: tried again later.
        next = Math.min(next, USAGE_DELAY_MS);
      }
    }
    if (next < Infinity) this.scheduleUsageWrite(next);
  }

  async tenants(): Promise<string[]> {
    this.assertOpen();
    return readdirSync(this.options.dir)
      .map((name) => /^tenant-(.+)\.db$/.exec(name)?.[1])
      .filter((tenant): tenant is string => tenant !== undefined && TENANT_ID.test(tenant))
      .sort();
  }

  /** Ids of the tenant's records, in insertion order. */
  async allIds(tenant: string): Promise<string[]> {
    return this.guard(tenant, () => this.partition(tenant, false)?.allIds() ?? []);
  }

  /** Deletes the tenant's files without reading them (nothing is flushed: they are going) and lifts a quarantine. */
  async dropTenant(tenant: string): Promise<void> {
    this.assertOpen();
    const files = this.files(tenant);
    this.partitions.get(tenant)?.abandon();
    this.partitions.delete(tenant);
    TenantPartition.deleteFiles(files);
    this.meta.prepare('DELETE FROM quarantined_tenants WHERE tenant = ?').run(tenant);
    this.quarantine.delete(tenant);
  }

  /** Tenants whose partition is quarantined as corrupt, sorted. */
  async quarantined(): Promise<string[]> {
    this.assertOpen();
    return [...this.quarantine].sort();
  }

  /** What the open partitions hold against the memory budget (a partition loads its graph only once it needs it). */
  memory(): { openPartitions: number; loadedGraphs: number; bytes: number; budgetBytes: number; evictions: number } {
    let bytes = 0;
    let loadedGraphs = 0;
    for (const partition of this.partitions.values()) {
      bytes += partition.memoryBytes;
      if (partition.holdsGraph) loadedGraphs += 1;
    }
    return { openPartitions: this.partitions.size, loadedGraphs, bytes, budgetBytes: this.budget(), evictions: this.evictions };
  }

  /** Writes every open tenant's counted uses, and its graph file if it changed since it was last written. */
  async flush(): Promise<void> {
    for (const [tenant, partition] of [...this.partitions]) {
      try {
        this.guard(tenant, () => partition.flush());
      } catch (error) {
        // A corrupt tenant is quarantined by guard; the others are still flushed.
        if (!(error instanceof IndexPartitionCorrupt)) throw error;
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.usageTimer);
    for (const partition of this.partitions.values()) {
      try {
        partition.close();
      } catch {
        // Its graph is rebuilt from the rows at the next open; the other partitions still close cleanly.
        partition.abandon();
      }
    }
    this.partitions.clear();
    this.meta.close();
  }

  async load(name: string): Promise<bigint | undefined> {
    this.assertOpen();
    const row = this.meta.prepare('SELECT position FROM checkpoints WHERE name = ?').safeIntegers(true).get(name) as
      { position: bigint } | undefined;
    return row?.position;
  }

  async save(name: string, position: bigint): Promise<void> {
    this.assertOpen();
    this.meta
      .prepare('INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position')
      .run(name, position);
  }

  /**
   * The open partition, now the most recently used; with `create` false,
   * undefined for a tenant that has no files (reads never create them). A
   * quarantined tenant's files are not touched.
   */
  private partition(tenant: string, create: boolean): TenantPartition | undefined {
    this.assertOpen();
    if (this.quarantine.has(tenant)) throw new IndexPartitionCorrupt(tenant);
    let partition = this.partitions.get(tenant);
    if (partition) {
      this.partitions.delete(tenant);
      this.partitions.set(tenant, partition);
      return partition;
    }
    const files = this.files(tenant);
    if (!create && !existsSync(files.db)) return undefined;
    partition = new TenantPartition(files, {
      tenant,
      dimensions: this.options.dimensions,
      model: this.options.model ?? UNNAMED_MODEL,
      graph: this.options.graph,
      persistEveryRows: this.options.persistEveryRows ?? 50_000,
      text: { ...DEFAULT_TEXT_ANALYSIS, ...this.options.text },
      ...(this.options.formats ? { formats: this.options.formats } : {}),
    });
    this.partitions.set(tenant, partition);
    this.enforceBudget(tenant);
    return partition;
  }

  /**
   * A question that needs neither the graph nor the rows' policy columns
   * (pending vectors, the embedding lag): asked of the open partition, else
   * of the tenant's file through a read-only connection closed at once, so
   * asking it of every tenant (`/health`, the embedding stage's sweep) loads
   * no graph and evicts no partition. Before, each such question opened the
   * partition, and a tenant whose graph alone exceeded the memory budget was
   * evicted (its graph written) and loaded again for its next batch, over and
   * over: 382 GB of I/O in the 1M bench. A file this build has not opened
   * yet (an older rows or vectors format, no model recorded) is opened in
   * full instead, which converts it.
   */
  private peek<T>(
    tenant: string,
    open: (partition: TenantPartition) => T,
    read: (db: Database.Database, modelCurrent: boolean) => T,
  ): T | undefined {
    this.assertOpen();
    if (this.quarantine.has(tenant)) throw new IndexPartitionCorrupt(tenant);
    const partition = this.partitions.get(tenant);
    if (partition) return open(partition);
    const files = this.files(tenant);
    if (!existsSync(files.db)) return undefined;
    const db = new Database(files.db, { readonly: true, fileMustExist: true });
    try {
      const model = currentModelOf(db, this.options.formats ?? FORMAT_VERSIONS);
      if (model !== undefined) return read(db, model === (this.options.model ?? UNNAMED_MODEL));
    } catch {
      // Not readable as this build writes it (a table or column still missing): the full open migrates it.
    } finally {
      db.close();
    }
    const opened = this.partition(tenant, false);
    return opened && open(opened);
  }

  /** Runs synchronous work on a tenant's partition; SQLite finding the files corrupt quarantines the tenant. */
  private guard<T>(tenant: string, work: () => T): T {
    try {
      return work();
    } catch (error) {
      throw this.corruptionOf(tenant, error) ?? error;
    }
  }

  /** For a corruption error: the tenant quarantined and the error to raise instead; otherwise undefined. */
  private corruptionOf(tenant: string, error: unknown): IndexPartitionCorrupt | undefined {
    if (error instanceof IndexPartitionCorrupt) return error;
    if (!isCorruption(error)) return undefined;
    this.partitions.get(tenant)?.abandon();
    this.partitions.delete(tenant);
    this.quarantine.add(tenant);
    this.meta
      .prepare('INSERT INTO quarantined_tenants (tenant, code, since) VALUES (?, ?, ?) ON CONFLICT (tenant) DO NOTHING')
      .run(tenant, (error as { code: string }).code, Date.now());
    return new IndexPartitionCorrupt(tenant);
  }

  private budget(): number {
    return this.options.memoryBudgetBytes ?? DEFAULT_INDEX_MEMORY_BYTES;
  }

  /**
   * Closes least recently used partitions until the open ones fit the budget.
   * `keep` (the one in use) and pinned ones stay open even over budget.
   */
  private enforceBudget(keep: string): void {
    let bytes = this.memory().bytes;
    for (const [tenant, partition] of [...this.partitions]) {
      if (bytes <= this.budget()) return;
      if (tenant === keep || this.pinned.has(tenant)) continue;
      bytes -= partition.memoryBytes;
      this.partitions.delete(tenant);
      this.evictions += 1;
      try {
        partition.close();
      } catch (error) {
        // Closing writes its graph; should that fail the graph is rebuilt at the next open.
        partition.abandon();
        this.corruptionOf(tenant, error);
      }
    }
  }

  private files(tenant: string): PartitionFiles {
    if (!TENANT_ID.test(tenant)) throw new RangeError('tenant id must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}');
    return { db: join(this.options.dir, `tenant-${tenant}.db`), graph: join(this.options.dir, `tenant-${tenant}.usearch`) };
  }

  private checkVector(vector: Float32Array, what: string): void {
    if (!(vector instanceof Float32Array) || vector.length !== this.options.dimensions) {
      throw new RangeError(`${what} must be a Float32Array of ${this.options.dimensions} dimensions`);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the memory index is closed');
  }
}

/**
 * The kind of writing of each candidate, by row id, when fusion can use it (`fuseByScript`): normalised fusion and
 * dense hits enough for two groups to be calibrated. Otherwise none is read.
 */
function scriptsForFusion(
  partition: TenantPartition,
  fusion: Fusion | undefined,
  text: readonly { rowid: number }[],
  vector: readonly { rowid: number }[],
): Map<string, ScriptGroup> | undefined {
  if (fusion?.method !== 'normalised' || vector.length < 2 * MINMAX_MIN_CANDIDATES) return undefined;
  const groups = partition.scriptGroups([...new Set([...text, ...vector].map((hit) => hit.rowid))]);
  return new Map([...groups].map(([rowid, script]) => [String(rowid), script]));
}
