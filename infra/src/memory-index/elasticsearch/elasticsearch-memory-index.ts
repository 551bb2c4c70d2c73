import { Client, type estypes } from '@elastic/elasticsearch';
import {
  MemoryRecord,
  smoothedSearch,
  type CheckpointStore,
  type EmbeddedVector,
  type EmbeddingLag,
  type ErasedProbe,
  type HybridQuery,
  type PendingEmbedding,
  type IndexFilter,
  type IndexedMemory,
  type Leftovers,
  type LineageEntry,
  type ListQuery,
  type MemoryIndex,
  type NeighbourMemory,
  type Neighbours,
  type SearchHit,
  contentBytes,
  type StoredUsage,
} from '@elma/domain';
import { countTokens } from '@elma/shared';
import { cosine, norm } from '../sqlite/vectors';
import { ElasticsearchIndexError, displayUrl, isAlreadyExists, isIndexNotFound } from './errors';
import {
  DEFAULT_NAMESPACE,
  MAPPING_VERSION,
  aliasName,
  aliasPattern,
  checkNamespace,
  checkpointAliasName,
  checkpointIndexMapping,
  checkpointIndexName,
  indexName,
  memoryIndexMapping,
  reindexName,
  tenantOfAlias,
  usageAliasName,
  usageIndexMapping,
  usageIndexName,
  UNNAMED_MODEL,
  type MemoryDocument,
} from './mapping';
import {
  CURRENT,
  LINEAGE_SOURCE,
  aliasSwapActions,
  bulkFailures,
  checkServerVersion,
  chunkOperations,
  currentFactsQuery,
  dropsSourceVectors,
  fuse,
  knnCosine,
  neighbourQuery,
  neighbourSelfQuery,
  lineageMatches,
  lineageOfQuery,
  type LineageSource,
  sameWordsQuery,
  vectorVersionsQuery,
  type NeighbourSource,
  getQuery,
  historyQuery,
  listQuery,
  leasesPast,
  lastCommitsCovered,
  lineageEntryOf,
  maxSeqNos,
  pageQuery,
  planUpsert,
  routeBodies,
  serverRrfBody,
  storableId,
  usageDocId,
  usageConflicts,
  usageOperations,
  embeddingLagQuery,
  vectorOf,
  modelVectorOf,
  pendingQuery,
  setVectorOperations,
  versionDocId,
  versionsQuery,
  type BulkItem,
  withUsage,
  type FusedHit,
  type RouteHit,
  type ShardStats,
  type VersionedUsage,
  type StoredVersion,
  type UsageDocument,
} from './requests';

export interface ElasticsearchMemoryIndexOptions {
  /** Elasticsearch URL, e.g. `http://127.0.0.1:9200`. */
  node: string;
  /** Vector length every upsert and query must have. */
  dimensions: number;
  /**
   * The embedder model (id with its version) whose vectors kNN searches
   * (documents carry their vector's model in `vector_model`); `unnamed` by default.
   */
  model?: string;
  /** Prefix of every index and alias name (`{namespace}-{tenant}-memories`); `elma` by default. */
  namespace?: string;
  /**
   * Fuse the two routes on the server (`retriever.rrf`) rather than in ELMA, for queries asking for RRF (or no
   * fusion in particular): the server's is unweighted and has no dense floor. Hits then carry no per-route ranks.
   */
  serverRrf?: boolean;
  /** A client to use instead of one made from `node`; the caller keeps it (close() does not close it). */
  client?: Client;
  /**
   * How a write is made visible to the next read: `wait_for` (default) waits
   * for the next scheduled refresh, `true` refreshes at once (tests, small
   * tenants; many tiny segments under a steady write load).
   */
  refresh?: 'wait_for' | true;
  /** Analyzer of the main text field of indices this instance creates (`english` by default; see `memoryIndexMapping`). */
  textAnalyzer?: string;
  /** How long purge waits for retention leases to release the deleted documents before it fails (default 120 s). */
  expungeTimeoutMs?: number;
}

/** Documents per bulk request (each with a vector of up to 4096 floats). */
const BULK_ACTIONS = 500;
/** Ids per `terms` lookup, well under Elasticsearch's 65,536-term limit. */
const TERMS_CHUNK = 5_000;
const RECORDS_PAGE = 1_000;
const LINEAGE_PAGE = 5_000;
/** Elasticsearch's default `index.max_result_window`: the largest `size` of one page. */
const MAX_PAGE = 10_000;
/** Probes per `_msearch` of `leftovers`, and the documents each may name as holding the same words. */
const LEFTOVER_PROBES = 200;
const SAME_WORDS_HITS = 20;
/** Repeats of a request answered 503 or 429 (pauses 50 ms, doubling: about 3 s in all). */
const TRANSIENT_RETRIES = 6;

/**
 * The production memory index: one Elasticsearch index per tenant behind
 * an alias (`{namespace}-{tenant}-memories`), created from the versioned
 * mapping on the tenant's first write; usage counts in a second per-tenant
 * index, checkpoints in `{namespace}-checkpoints`. Every version of a record
 * is its own document (transaction time `tx_from`/`tx_to`), as the SQLite
 * partition keeps one row per version.
 *
 * Atomicity: Elasticsearch has no multi-document transaction, so "atomically
 * per call" is not met. An upsert is one bulk request per 500 documents,
 * applied in order; should one fail part-way, some versions are written and
 * others not, and the call throws. Every write is idempotent (a version's
 * document id is fixed; see `planUpsert`), so the caller's retry, the
 * projection replaying its batch, completes it. Readers may see the
 * intermediate state meanwhile. A single writer per tenant is assumed (the
 * projection); concurrent upserts of the same id could leave two current
 * versions, which the next upsert of that id repairs.
 */
export class ElasticsearchMemoryIndex implements MemoryIndex, CheckpointStore {
  private readonly client: Client;
  private readonly ownsClient: boolean;
  private readonly namespace: string;
  /** Aliases known to exist, so a write does not ask each time. */
  private readonly knownAliases = new Set<string>();
  /** Tenants being reindexed, with the index being filled: purge reaches it too. */
  private readonly reindexing = new Map<string, string>();
  private server?: Promise<{ major: number; minor: number }>;
  private lastSeq = 0;
  private closed = false;

  /** Connects and checks that the server answers and is Elasticsearch 8 or 9. */
  static async open(options: ElasticsearchMemoryIndexOptions): Promise<ElasticsearchMemoryIndex> {
    const index = new ElasticsearchMemoryIndex(options);
    try {
      await index.serverVersion();
    } catch (error) {
      await index.close();
      throw error;
    }
    return index;
  }

  /**
   * @param pinned a tenant whose records are read and written in one concrete
   *   index instead of through its alias: the index a reindex is filling.
   */
  constructor(
    private readonly options: ElasticsearchMemoryIndexOptions,
    private readonly pinned?: { tenant: string; index: string },
  ) {
    if (!Number.isInteger(options.dimensions) || options.dimensions < 1) throw new RangeError('dimensions must be a positive integer');
    this.namespace = checkNamespace(options.namespace ?? DEFAULT_NAMESPACE);
    this.ownsClient = options.client === undefined;
    this.client = options.client ?? new Client({ node: options.node });
  }

  async upsert(tenant: string, memories: IndexedMemory[]): Promise<void> {
    if (memories.length === 0) return;
    for (const { record, vector } of memories) {
      if (record.tenant !== tenant) throw new Error(`memory ${record.id} belongs to another tenant than ${tenant}`);
      if (vector) this.checkVector(vector, `memory ${record.id}`);
    }
    if (this.pinned?.tenant === tenant) return this.writeVersions(this.pinned.index, memories, false);
    await this.ensureMemoryIndex(tenant);
    await this.writeVersions(aliasName(tenant, this.namespace), memories, true);
  }

  async get(tenant: string, id: string): Promise<IndexedMemory | undefined> {
    const alias = this.memoriesOf(tenant);
    if (!storableId(id)) return undefined;
    const [hit] = await this.searchHits<MemoryDocument>(alias, getQuery(id), 'get');
    if (!hit?._source) return undefined;
    const usage = await this.usageOf(tenant, [id]);
    const record = withUsage(MemoryRecord.parse(hit._source.record), usage.get(id));
    // The vector under the name of the model that made it (lineage), whichever that is.
    const model = hit._source.vector_model;
    return model ? { record, vector: vectorOf(hit._source, this.options.dimensions), model } : { record };
  }

  async search(query: HybridQuery): Promise<SearchHit[]> {
    // Smoothing and the conversation lift by composition: the pool's search, then its neighbours (both `_msearch`),
    // ranked by the domain.
    if (query.smoothing || query.conversation)
      return smoothedSearch(
        query,
        (q) => this.search(q),
        (t, ids, f) => this.neighbours(t, ids, f),
      );
    const alias = this.memoriesOf(query.tenant);
    if (query.limit <= 0) return [];
    if (query.vector) this.checkVector(query.vector, 'query vector');

    // The server only does (unweighted) RRF: a query asking for another fusion is fused by ELMA.
    const onServer = this.options.serverRrf && (query.fusion === undefined || query.fusion.method === 'rrf');
    const fused = onServer ? await this.serverFused(alias, query) : await this.fusedHits(alias, query);
    if (fused.length === 0) return [];
    const [docs, usage] = await Promise.all([
      this.searchHits<MemoryDocument>(alias, { query: { ids: { values: fused.map((f) => f._id) } }, size: fused.length }, 'search'),
      this.usageOf(
        query.tenant,
        fused.map((f) => f.id),
      ),
    ]);
    const byId = new Map(docs.map((d) => [d._id, d._source!]));
    const queryNorm = query.vector ? norm(query.vector) : 0;

    const hits: SearchHit[] = [];
    for (const f of fused) {
      // A document replaced between the route queries and this fetch is gone: it is left out, as a row
      // deleted under a reader would be.
      const doc = byId.get(f._id);
      if (!doc) continue;
      const vector = modelVectorOf(doc, this.options.dimensions, this.model);
      const hit: SearchHit = { record: withUsage(doc.record, usage.get(doc.id)), score: f.score };
      if (vector) hit.vector = vector;
      if (f.contributions) hit.contributions = f.contributions;
      if (f.bm25Rank !== undefined) hit.bm25Rank = f.bm25Rank;
      if (f.bm25Score !== undefined) hit.bm25Score = f.bm25Score;
      if (f.vectorRank !== undefined) hit.vectorRank = f.vectorRank;
      if (query.vector && vector) hit.cosine = cosine(query.vector, vector, queryNorm);
      if (doc.tokens !== undefined) hit.tokens = doc.tokens;
      hits.push(hit);
    }
    return hits;
  }

  async neighbours(tenant: string, ids: string[], filter: IndexFilter): Promise<Neighbours[]> {
    const alias = this.memoriesOf(tenant);
    const wanted = [...new Set(ids)].filter(storableId);
    const selfQuery = wanted.length > 0 ? neighbourSelfQuery(wanted, filter) : undefined;
    if (!selfQuery) return [];
    const selves = (await this.searchHits<NeighbourSource>(alias, selfQuery, 'neighbours'))
      .map((h) => h._source!)
      // Documents indexed before subjects were kept cannot be placed in a conversation.
      .filter((s): s is NeighbourSource & { subject: string; seq: number } => typeof s.subject === 'string' && typeof s.seq === 'number');
    if (selves.length === 0) return [];
    const bodies = selves.flatMap((s) => [neighbourQuery(s, 'previous', filter)!, neighbourQuery(s, 'next', filter)!]);
    const found = (await this.msearch<MemoryDocument>(alias, 'neighbours', bodies)).map((hits) => hits[0]?._source);
    const usage = await this.usageOf(
      tenant,
      found.flatMap((doc) => (doc ? [doc.id] : [])),
    );
    const memory = (doc: MemoryDocument | undefined): NeighbourMemory | undefined =>
      doc && {
        record: withUsage(doc.record, usage.get(doc.id)),
        vector: vectorOf(doc, this.options.dimensions),
        ...(doc.tokens !== undefined ? { tokens: doc.tokens } : {}),
      };
    return selves.map((s, i) => {
      const previous = memory(found[2 * i]);
      const next = memory(found[2 * i + 1]);
      return { id: s.id, ...(previous ? { previous } : {}), ...(next ? { next } : {}) };
    });
  }

  /** Both routes in one `_msearch`, fused by ELMA. */
  private async fusedHits(alias: string, query: HybridQuery): Promise<FusedHit[]> {
    const routes = routeBodies(query, this.model);
    const bodies = [routes.bm25, routes.knn].filter((b): b is object => b !== undefined);
    if (bodies.length === 0) return [];
    const ranked = (await this.msearch<{ id: string; record?: { content?: { text?: string } } }>(alias, 'search', bodies)).map((hits) =>
      hits.map((h): RouteHit => {
        const text = h._source!.record?.content?.text;
        return { _id: h._id!, id: h._source!.id, score: h._score ?? 0, ...(text !== undefined ? { text } : {}) };
      }),
    );
    const bm25 = routes.bm25 ? ranked.shift()! : [];
    const knn = routes.knn ? ranked.shift()!.map((h) => ({ ...h, score: knnCosine(h.score) })) : [];
    return fuse(bm25, knn, query.limit, query.fusion);
  }

  /**
   * Fusion by the server's RRF retriever when both routes run; per-route
   * ranks are then unknown and left out. With one route there is nothing to
   * fuse, and ELMA's fusion of the one list gives the same scores.
   */
  private async serverFused(alias: string, query: HybridQuery): Promise<FusedHit[]> {
    const body = serverRrfBody(query, this.model);
    if (!body) return this.fusedHits(alias, query);
    const hits = await this.searchHits<{ id: string }>(alias, body, 'search');
    return hits.map((h) => ({ _id: h._id!, id: h._source!.id, score: h._score ?? 0 }));
  }

  /**
   * Deletes every version of the records (and their usage counts) with a
   * refresh, checks by count that none is left, then expunges the deleted
   * documents from the segments: Elasticsearch only marks a deleted document
   * (a soft delete) until a merge rewrites its segment, and until then its
   * text and vector are still in the files. The mapping sets
   * `expunge_deletes_allowed: 0`, so every segment holding a purged document
   * is rewritten, not only those above the default 10 %. Retention leases
   * delay that by up to about 30 s (see `expungeDeletes`). Replicas and snapshots are outside this call: a snapshot taken
   * before the purge still holds the records.
   */
  async purge(tenant: string, ids: string[]): Promise<void> {
    const alias = aliasName(tenant, this.namespace);
    // An id no record can have has nothing to purge.
    const unique = [...new Set(ids)].filter(storableId);
    if (unique.length === 0) return;
    const targets = [alias, ...(this.reindexing.has(tenant) ? [this.reindexing.get(tenant)!] : [])];
    for (let attempt = 1; ; attempt++) {
      for (const chunk of chunks(unique, TERMS_CHUNK)) {
        await this.call('purge', alias, () =>
          this.client.deleteByQuery({
            index: targets,
            query: { terms: { id: chunk } },
            refresh: true,
            // A version written meanwhile makes a conflict; it is counted below and deleted in the next round.
            conflicts: 'proceed',
            ignore_unavailable: true,
            allow_no_indices: true,
          }),
        );
      }
      const left = await this.countAll(targets, unique);
      if (left === 0) break;
      if (attempt === 3)
        throw new ElasticsearchIndexError(`elasticsearch purge left ${left} documents in ${alias} after ${attempt} attempts`);
    }
    const usage = usageAliasName(tenant, this.namespace);
    for (const chunk of chunks(unique, TERMS_CHUNK)) {
      await this.call('purge usage', usage, () =>
        this.client.deleteByQuery({
          index: usage,
          query: { terms: { id: chunk } },
          refresh: true,
          conflicts: 'proceed',
          ignore_unavailable: true,
          allow_no_indices: true,
        }),
      );
    }
    await this.expungeDeletes([...targets, usage]);
  }

  /**
   * Flushes, waits until no retention lease still retains the deletes just
   * made (see `leasesPast`), then merges them away. Should the leases not
   * move within `expungeTimeoutMs`, the merge still runs but the call
   * throws: the purge is done as far as queries go, not yet in the files,
   * and a retry finishes it.
   */
  private async expungeDeletes(indices: string[]): Promise<void> {
    const target = indices[0];
    const options = { index: indices, ignore_unavailable: true, allow_no_indices: true };
    await this.call('flush', target, () => this.client.indices.flush(options));
    const shardStats = () =>
      this.call('stats', target, () => this.client.indices.stats({ ...options, level: 'shards' }) as Promise<ShardStats>);
    const first = await shardStats();
    const marks = maxSeqNos(first);
    const deadline = Date.now() + (this.options.expungeTimeoutMs ?? 120_000);
    let released = leasesPast(first, marks);
    while (!released && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      released = leasesPast(await shardStats(), marks);
    }
    await this.call('forcemerge', target, () => this.client.indices.forcemerge({ ...options, only_expunge_deletes: true }));
    if (!released)
      throw new ElasticsearchIndexError(
        `elasticsearch purge on ${target}: retention leases still hold the deleted documents; retry to expunge them`,
      );
    // The merge dropped the documents from the segments; the commits and translog from before it may still hold
    // them. Once the global checkpoint covers the last commit (at once, unless a write is in flight), a flush drops them.
    while (!lastCommitsCovered(await shardStats())) {
      if (Date.now() >= deadline)
        throw new ElasticsearchIndexError(
          `elasticsearch purge on ${target}: the translog still holds the deleted documents; retry to trim it`,
        );
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await this.call('flush', target, () => this.client.indices.flush({ ...options, force: true, wait_if_ongoing: true }));
  }

  /** Documents of these ids in any version, current or not. */
  private async countAll(indices: string[], ids: string[]): Promise<number> {
    let total = 0;
    for (const chunk of chunks(ids, TERMS_CHUNK)) {
      const { count } = await this.call('count', indices[0], () =>
        this.client.count({ index: indices, query: { terms: { id: chunk } }, ignore_unavailable: true, allow_no_indices: true }),
      );
      total += count;
    }
    return total;
  }

  /** Paged like `records()`, reading only each record's content. */
  async storedUsage(tenant: string): Promise<StoredUsage> {
    const usage: StoredUsage = { memories: 0, bytes: 0 };
    const contents = this.paged(
      this.memoriesOf(tenant),
      RECORDS_PAGE,
      ['record.content'],
      (source: { record: Pick<MemoryRecord, 'content'> }) => source.record.content,
    );
    for await (const content of contents) {
      usage.memories++;
      usage.bytes += contentBytes(content);
    }
    return usage;
  }

  records(tenant: string): AsyncIterable<MemoryRecord> {
    const alias = this.memoriesOf(tenant);
    return this.paged(alias, RECORDS_PAGE, ['record'], (source: { record: MemoryRecord }) => source.record);
  }

  lineage(tenant: string): AsyncIterable<LineageEntry> {
    const alias = this.memoriesOf(tenant);
    return this.paged(alias, LINEAGE_PAGE, LINEAGE_SOURCE, lineageEntryOf);
  }

  async lineageOf(tenant: string, match: { ids?: readonly string[]; subjects?: readonly string[] }): Promise<LineageEntry[]> {
    const alias = this.memoriesOf(tenant);
    const ids = (match.ids ?? []).filter(storableId);
    const subjects = match.subjects ?? [];
    if (ids.length + subjects.length === 0) return [];
    const found = new Map<string, { seq: number; entry: LineageEntry }>();
    // Chunks of ids (a terms query has a size limit), merged back into insertion order.
    for (const chunk of ids.length > 0 ? chunks(ids, TERMS_CHUNK) : [[]]) {
      for (let after: unknown[] | undefined; ;) {
        const hits = await this.searchHits<LineageSource & { seq: number }>(
          alias,
          lineageOfQuery(chunk, subjects, MAX_PAGE, after),
          'lineage',
        );
        for (const hit of hits) found.set(hit._source!.id, { seq: hit._source!.seq, entry: lineageEntryOf(hit._source!) });
        if (hits.length < MAX_PAGE) break;
        after = hits[hits.length - 1].sort;
      }
    }
    const [idSet, subjectSet] = [new Set(ids), new Set(subjects)];
    return [...found.values()]
      .sort((a, b) => a.seq - b.seq || (a.entry.id < b.entry.id ? -1 : 1))
      .map((f) => f.entry)
      .filter((entry) => lineageMatches(entry, idSet, subjectSet));
  }

  /**
   * One document per version holds the text, its terms and its vector together, and a deleted document
   * is in no query's reach: a document under a probed id is its row and its terms (and its vector, when it
   * has one); nothing else can be left. Which texts a current document outside the probes holds verbatim:
   * one `_msearch` per chunk of probes.
   */
  async leftovers(tenant: string, probes: ErasedProbe[], _options: { minCosine: number }): Promise<Leftovers> {
    const alias = this.memoriesOf(tenant);
    const ids = [...new Set(probes.map((p) => p.id))].filter(storableId);
    if (ids.length === 0) return { rows: [], terms: [], vectors: [], sharedText: [] };
    const rows = [...new Set((await this.storedVersions(alias, ids)).map((v) => v.id))];
    const withVector = new Set<string>();
    for (const chunk of chunks(ids, TERMS_CHUNK)) {
      for (let after: unknown[] | undefined; ;) {
        const hits = await this.searchHits<{ id: string }>(alias, vectorVersionsQuery(chunk, MAX_PAGE, after), 'leftovers');
        hits.forEach((h) => withVector.add(h._source!.id));
        if (hits.length < MAX_PAGE) break;
        after = hits[hits.length - 1].sort;
      }
    }
    const sharedText: string[] = [];
    for (const chunk of chunks(probes, LEFTOVER_PROBES)) {
      const texts = (
        await this.msearch<{ record: { content: { text: string } } }>(
          alias,
          'leftovers',
          chunk.map((p) => sameWordsQuery(p.text, ids, SAME_WORDS_HITS)),
        )
      ).map((hits) => hits.map((h) => h._source!.record.content.text));
      chunk.forEach((p, i) => texts[i].includes(p.text) && sharedText.push(p.id));
    }
    const probedVector = new Set(probes.filter((p) => p.vector).map((p) => p.id));
    return { rows, terms: rows, vectors: rows.filter((id) => withVector.has(id) && probedVector.has(id)), sharedText };
  }

  /**
   * Current versions in insertion order, a page per request with
   * `search_after`, so no cursor or point in time stays open across the
   * consumer's awaits (as the SQLite target pages by rowid): a record written
   * meanwhile after the last page read is listed, one written before it is not.
   */
  private async *paged<S, T>(alias: string, size: number, source: readonly string[], map: (source: S) => T): AsyncIterable<T> {
    for (let after: unknown[] | undefined; ;) {
      const hits = await this.searchHits<S>(alias, pageQuery(size, source, after), 'page');
      for (const hit of hits) yield map(hit._source!);
      if (hits.length < size) return;
      after = hits[hits.length - 1].sort;
    }
  }

  async list(query: ListQuery): Promise<MemoryRecord[]> {
    const alias = this.memoriesOf(query.tenant);
    const body = query.limit > 0 ? listQuery(query) : undefined;
    if (!body) return [];
    const docs = (await this.searchHits<{ id: string; record: MemoryRecord }>(alias, body, 'list')).map((h) => h._source!);
    const usage = await this.usageOf(
      query.tenant,
      docs.map((d) => d.id),
    );
    return docs.map((d) => withUsage(d.record, usage.get(d.id)));
  }

  async versions(tenant: string, id: string): Promise<MemoryRecord[]> {
    const alias = this.memoriesOf(tenant);
    if (!storableId(id)) return [];
    const records: MemoryRecord[] = [];
    for (let after: unknown[] | undefined; ;) {
      const hits = await this.searchHits<{ id: string; record: MemoryRecord }>(alias, historyQuery(id, MAX_PAGE, after), 'versions');
      records.push(...hits.map((h) => h._source!.record));
      if (hits.length < MAX_PAGE) break;
      after = hits[hits.length - 1].sort;
    }
    if (records.length === 0) return [];
    const usage = (await this.usageOf(tenant, [id])).get(id);
    return records.map((record) => withUsage(record, usage));
  }

  async currentFacts(tenant: string, factKey: string): Promise<MemoryRecord[]> {
    const alias = this.memoriesOf(tenant);
    const records: MemoryRecord[] = [];
    for (let after: unknown[] | undefined; ;) {
      const hits = await this.searchHits<{ record: MemoryRecord }>(alias, currentFactsQuery(factKey, MAX_PAGE, after), 'currentFacts');
      records.push(...hits.map((h) => h._source!.record));
      if (hits.length < MAX_PAGE) return records;
      after = hits[hits.length - 1].sort;
    }
  }

  async recordUsage(tenant: string, ids: string[], use: 'retrieved' | 'adopted', at: string): Promise<void> {
    const alias = this.memoriesOf(tenant);
    const atMs = Date.parse(at);
    if (Number.isNaN(atMs)) throw new RangeError('at is not a valid ISO date-time');
    // Unknown ids are ignored: only ids with a stored version get a usage document.
    const candidates = [...new Set(ids)].filter(storableId);
    if (candidates.length === 0) return;
    const known: string[] = [];
    for (const chunk of chunks(candidates, TERMS_CHUNK)) {
      const response = await this.call('recordUsage', alias, () =>
        this.client.search({
          index: alias,
          size: 0,
          query: { terms: { id: chunk } },
          aggs: { ids: { terms: { field: 'id', size: chunk.length } } },
          ignore_unavailable: true,
          allow_no_indices: true,
        }),
      );
      const buckets = (response.aggregations?.ids as { buckets?: { key: string }[] } | undefined)?.buckets ?? [];
      known.push(...buckets.map((b) => b.key));
    }
    if (known.length === 0) return;
    const usage = usageAliasName(tenant, this.namespace);
    await this.ensureIndex(usage, usageIndexName(tenant, this.namespace), usageIndexMapping());
    let pending = known;
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > 10)
        throw new ElasticsearchIndexError(
          `elasticsearch recordUsage on ${usage}: ${pending.length} ids still contended after ${attempt - 1} attempts`,
        );
      const stored = await this.versionedUsage(usage, pending);
      const response = await this.call('recordUsage', usage, () =>
        this.client.bulk({
          index: usage,
          operations: usageOperations(pending, use, atMs, stored),
          refresh: this.options.refresh ?? 'wait_for',
          require_alias: true,
        }),
      );
      if (!response.errors) return;
      const { conflicts, failures } = usageConflicts(response.items as never, pending);
      if (failures.length > 0)
        throw new ElasticsearchIndexError(
          `elasticsearch recordUsage on ${usage}: ${failures.length} failed, first ${failures.slice(0, 3).join('; ')}`,
        );
      pending = conflicts;
    }
  }

  /** The usage documents of these ids with their sequence numbers, read in real time (`_mget`), not as of the last refresh. */
  private async versionedUsage(usage: string, ids: string[]): Promise<Map<string, VersionedUsage>> {
    const response = await this.call('recordUsage read', usage, () =>
      this.client.mget<UsageDocument>({ index: usage, ids: ids.map(usageDocId) }),
    );
    const stored = new Map<string, VersionedUsage>();
    for (const doc of response.docs) {
      if ('found' in doc && doc.found && doc._source && doc._seq_no !== undefined && doc._primary_term !== undefined) {
        stored.set(doc._source.id, { doc: doc._source, seqNo: doc._seq_no, primaryTerm: doc._primary_term });
      }
    }
    return stored;
  }

  async tenants(): Promise<string[]> {
    this.assertOpen();
    const pattern = aliasPattern(this.namespace);
    const response = await this.call('tenants', pattern, () => this.client.indices.getAlias({ name: pattern }, { ignore: [404] }));
    const tenants = new Set<string>();
    for (const entry of Object.values(response as Record<string, { aliases?: Record<string, unknown> }>)) {
      for (const alias of Object.keys(entry?.aliases ?? {})) {
        const tenant = tenantOfAlias(alias, this.namespace);
        if (tenant !== undefined) tenants.add(tenant);
      }
    }
    return [...tenants].sort();
  }

  /**
   * The mapping version of the concrete index each tenant's alias points at
   * (`_meta.mapping_version`, else the `-v<n>` of its name; undefined when
   * neither says): what the format check compares with `MAPPING_VERSION`
   * before the projection writes. Reads only.
   */
  async mappingVersions(): Promise<{ tenant: string; index: string; version: number | undefined }[]> {
    this.assertOpen();
    const pattern = aliasPattern(this.namespace);
    const aliases = (await this.call('tenants', pattern, () =>
      this.client.indices.getAlias({ name: pattern }, { ignore: [404] }),
    )) as Record<string, { aliases?: Record<string, unknown> }>;
    const owned = Object.entries(aliases ?? {}).flatMap(([index, entry]) =>
      Object.keys(entry?.aliases ?? {}).flatMap((alias) => {
        const tenant = tenantOfAlias(alias, this.namespace);
        return tenant === undefined ? [] : [{ tenant, index }];
      }),
    );
    if (owned.length === 0) return [];
    const mappings = (await this.call('get mapping', pattern, () =>
      this.client.indices.getMapping({ index: [...new Set(owned.map((o) => o.index))] }),
    )) as Record<string, { mappings?: { _meta?: { mapping_version?: unknown } } }>;
    return owned
      .map(({ tenant, index }) => {
        const recorded = mappings[index]?.mappings?._meta?.mapping_version;
        const named = /-memories-v([0-9]+)(?:-r[0-9]+)?$/.exec(index)?.[1];
        const version = typeof recorded === 'number' ? recorded : named !== undefined ? Number(named) : undefined;
        return { tenant, index, version };
      })
      .sort((a, b) => a.tenant.localeCompare(b.tenant));
  }

  async pendingEmbeddings(tenant: string, limit: number): Promise<PendingEmbedding[]> {
    if (limit <= 0) return [];
    const alias = this.memoriesOf(tenant);
    const hits = await this.searchHits<{ id: string; version: number; record: { content: { text: string } } }>(
      alias,
      pendingQuery(Math.min(limit, MAX_PAGE)),
      'pending embeddings',
    );
    return hits.map((h) => ({ id: h._source!.id, version: h._source!.version, text: h._source!.record.content.text }));
  }

  /**
   * Partial updates of the versions' documents, each a no-op unless that
   * version is still current; a document gone meanwhile (purged, dropped) is
   * passed over. Vectors of another model than the index's are ignored.
   */
  async setVectors(tenant: string, items: EmbeddedVector[]): Promise<void> {
    const kept = items.filter((item) => item.model === this.model);
    if (kept.length === 0) return;
    for (const item of kept) this.checkVector(item.vector, `vector of memory ${item.id}`);
    const alias = this.memoriesOf(tenant);
    this.assertOpen();
    // Only versions still current: a vector for a version replaced meanwhile is dropped (its successor is pending).
    const current = new Set(
      (await this.storedVersions(alias, [...new Set(kept.map((item) => item.id))].filter(storableId)))
        .filter((v) => v.tx_to === null)
        .map((v) => v._id),
    );
    const operations = kept
      .filter((item) => current.has(versionDocId(item.id, item.version)))
      .flatMap((item) => setVectorOperations(versionDocId(item.id, item.version), item.vector, item.model));
    for (const chunk of chunkOperations(operations as never[], BULK_ACTIONS)) {
      const response = await this.call('set vectors', alias, () =>
        this.client.bulk({
          index: alias,
          operations: chunk,
          refresh: this.options.refresh ?? 'wait_for',
          ...(this.pinned?.tenant === tenant ? {} : { require_alias: true }),
        }),
      );
      if (!response.errors) continue;
      // A version purged (or its tenant dropped) while it was being embedded is simply not there any more.
      const failures = bulkFailures(
        (response.items as BulkItem[]).filter((item) => Object.values(item).some((r) => r && r.status !== 404)) as never,
      );
      if (failures.length > 0)
        throw new ElasticsearchIndexError(
          `elasticsearch set vectors into ${alias}: ${failures.length} failed, first ${failures.slice(0, 3).join('; ')}`,
        );
    }
  }

  /**
   * Pending documents (with the oldest) and, as `reindexNeeded`, the tenants
   * holding current documents whose vector is of another model, or of none
   * recorded (indexed before models were): their dense route misses them
   * until the tenant is reindexed.
   */
  async embeddingLag(tenant?: string): Promise<EmbeddingLag> {
    const lag: EmbeddingLag = { pending: 0, reindexNeeded: [] };
    let oldest: number | undefined;
    for (const name of tenant === undefined ? await this.tenants() : [tenant]) {
      const alias = this.memoriesOf(name);
      const response = await this.call('embedding lag', alias, () =>
        this.client.search({ index: alias, ignore_unavailable: true, allow_no_indices: true, ...embeddingLagQuery(this.model) }),
      );
      const aggs = response.aggregations as
        { pending: { doc_count: number; oldest: { value: number | null } }; stale: { doc_count: number } } | undefined;
      if (!aggs) continue;
      lag.pending += aggs.pending.doc_count;
      const first = aggs.pending.oldest.value;
      if (first !== null && (oldest === undefined || first < oldest)) oldest = first;
      if (aggs.stale.doc_count > 0) lag.reindexNeeded.push(name);
    }
    if (oldest !== undefined) lag.oldestPendingAt = new Date(oldest).toISOString();
    return lag;
  }

  async count(tenant: string): Promise<number> {
    const alias = this.memoriesOf(tenant);
    this.assertOpen();
    const { count } = await this.call('count', alias, () =>
      this.client.count({ index: alias, query: CURRENT, ignore_unavailable: true, allow_no_indices: true }),
    );
    return count;
  }

  /** Ids of the tenant's records, in insertion order. */
  async allIds(tenant: string): Promise<string[]> {
    const ids: string[] = [];
    for await (const entry of this.paged(this.memoriesOf(tenant), MAX_PAGE, ['id'], (s: { id: string }) => s.id)) ids.push(entry);
    return ids;
  }

  /** Deletes the indices behind the tenant's aliases (records and usage) by name, never by wildcard. */
  async dropTenant(tenant: string): Promise<void> {
    const alias = aliasName(tenant, this.namespace);
    const usage = usageAliasName(tenant, this.namespace);
    this.assertOpen();
    const indices = new Set([indexName(tenant, MAPPING_VERSION, this.namespace), usageIndexName(tenant, this.namespace)]);
    for (const name of [alias, usage]) for (const index of await this.indicesOf(name)) indices.add(index);
    await this.call('dropTenant', alias, () =>
      this.client.indices.delete({ index: [...indices], ignore_unavailable: true, allow_no_indices: true }),
    );
    this.knownAliases.delete(alias);
    this.knownAliases.delete(usage);
  }

  /**
   * Builds the tenant's index anew and swaps the alias to it: a new concrete
   * index (`...-v{MAPPING_VERSION}-r{stamp}`) is created from the current
   * mapping, `fill` gets this adapter pinned to it (reads and writes of the
   * tenant go to the new index, with upsert's rules), then one
   * `_aliases` call removes the alias from the old index and adds it to the
   * new one, so readers see the old index or the new one, never neither;
   * the old index is then deleted. Usage counts live in their own index and
   * are kept. Writes through the alias while `fill` runs still go to the old
   * index and are lost with it, so the tenant's writers (the projection)
   * must be paused, or `fill` must replay up to the end. A purge meanwhile
   * reaches the new index too. Should `fill` fail, the new index is deleted
   * and the alias left where it was.
   */
  async reindex(tenant: string, fill: (target: MemoryIndex) => Promise<void>): Promise<{ from?: string; to: string; count: number }> {
    const alias = aliasName(tenant, this.namespace);
    this.assertOpen();
    if (this.reindexing.has(tenant)) throw new Error(`tenant ${tenant} is already being reindexed`);
    const to = reindexName(tenant, MAPPING_VERSION, String(Date.now()), this.namespace);
    await this.call('reindex create', to, async () => this.client.indices.create({ index: to, ...(await this.memoryIndexBody()) }));
    this.reindexing.set(tenant, to);
    try {
      // The same adapter pinned to the new index, so whatever fills it (the projection) reads what it wrote.
      await fill(new ElasticsearchMemoryIndex({ ...this.options, client: this.client }, { tenant, index: to }));
      await this.call('reindex refresh', to, () => this.client.indices.refresh({ index: to }));
      const from = await this.indicesOf(alias);
      await this.call('reindex alias swap', alias, () => this.client.indices.updateAliases({ actions: aliasSwapActions(alias, from, to) }));
      this.knownAliases.add(alias);
      if (from.length > 0)
        await this.call('reindex delete old', alias, () => this.client.indices.delete({ index: from, ignore_unavailable: true }));
      const { count } = await this.call('count', to, () => this.client.count({ index: to, query: CURRENT }));
      return { ...(from.length > 0 ? { from: from.join(',') } : {}), to, count };
    } catch (error) {
      await this.client.indices.delete({ index: to, ignore_unavailable: true }).catch(() => undefined);
      throw error;
    } finally {
      this.reindexing.delete(tenant);
    }
  }

  /** The tenant's records: through the alias, or in the pinned index being filled. */
  private memoriesOf(tenant: string): string {
    return this.pinned?.tenant === tenant ? this.pinned.index : aliasName(tenant, this.namespace);
  }

  /** Refreshes every index of the namespace, so all writes so far are searchable. */
  async flush(): Promise<void> {
    this.assertOpen();
    const pattern = `${this.namespace}-*`;
    await this.call('refresh', pattern, () =>
      this.client.indices.refresh({ index: pattern, allow_no_indices: true, ignore_unavailable: true }),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsClient) await this.client.close();
  }

  async load(name: string): Promise<bigint | undefined> {
    this.assertOpen();
    const alias = checkpointAliasName(this.namespace);
    // A get is real-time: it sees the last save without a refresh.
    const response = await this.call('load checkpoint', alias, () =>
      this.client.get<{ position: string }>({ index: alias, id: name }, { ignore: [404] }),
    );
    return response.found && response._source ? BigInt(response._source.position) : undefined;
  }

  async save(name: string, position: bigint): Promise<void> {
    this.assertOpen();
    const alias = checkpointAliasName(this.namespace);
    await this.ensureIndex(alias, checkpointIndexName(this.namespace), checkpointIndexMapping());
    await this.call('save checkpoint', alias, () =>
      this.client.index({ index: alias, id: name, document: { position: position.toString() }, require_alias: true }),
    );
  }

  /** Plans the versions to write against what `target` holds, then writes them in order. */
  private async writeVersions(target: string, memories: IndexedMemory[], requireAlias: boolean): Promise<void> {
    const stored = await this.storedVersions(target, [...new Set(memories.map((m) => m.record.id))]);
    const plan = planUpsert(stored, memories, { nextSeq: () => this.nextSeq(), countTokens, model: this.model, now: Date.now() });
    await this.bulk(target, plan.operations, requireAlias);
  }

  /** Every version of these ids that `target` holds (any number per id, so paged). */
  private async storedVersions(target: string, ids: string[]): Promise<StoredVersion[]> {
    const stored: StoredVersion[] = [];
    for (const chunk of chunks(ids, TERMS_CHUNK)) {
      for (let after: unknown[] | undefined; ;) {
        const hits = await this.searchHits<Omit<StoredVersion, '_id'>>(target, versionsQuery(chunk, MAX_PAGE, after), 'upsert lookup');
        stored.push(...hits.map((h) => ({ _id: h._id!, ...h._source!, tx_to: h._source!.tx_to ?? null })));
        if (hits.length < MAX_PAGE) break;
        after = hits[hits.length - 1].sort;
      }
    }
    return stored;
  }

  /**
   * Bulk requests in order, each refreshed before it returns so the next read
   * sees it. `require_alias` refuses to write when the alias is gone (a
   * concurrent dropTenant) rather than let Elasticsearch auto-create an
   * unmapped index under the alias's name.
   */
  private async bulk(target: string, operations: object[], requireAlias: boolean): Promise<void> {
    for (const chunk of chunkOperations(operations as never[], BULK_ACTIONS)) {
      const response = await this.call('bulk', target, () =>
        this.client.bulk({
          index: target,
          operations: chunk,
          refresh: this.options.refresh ?? 'wait_for',
          ...(requireAlias ? { require_alias: true } : {}),
        }),
      ).catch((error: unknown) => {
        // The alias may have been dropped by another process: ask again on the retry rather than trust the cache.
        this.knownAliases.delete(target);
        throw error;
      });
      if (response.errors) {
        this.knownAliases.delete(target);
        const failures = bulkFailures(response.items as never);
        throw new ElasticsearchIndexError(
          `elasticsearch bulk into ${target}: ${failures.length} failed, first ${failures.slice(0, 3).join('; ')}`,
        );
      }
    }
  }

  /** Usage documents of these record ids, by record id. */
  private async usageOf(tenant: string, ids: string[]): Promise<Map<string, UsageDocument>> {
    const usage = usageAliasName(tenant, this.namespace);
    if (ids.length === 0) return new Map();
    const hits = await this.searchHits<UsageDocument>(
      usage,
      { query: { ids: { values: [...new Set(ids)].map(usageDocId) } }, size: ids.length },
      'usage',
    );
    return new Map(hits.map((h) => [h._source!.id, h._source!]));
  }

  private async searchHits<S>(index: string, body: object, operation: string) {
    this.assertOpen();
    const response = await this.call(operation, index, () =>
      this.client.search<S>({ index, ...body, ignore_unavailable: true, allow_no_indices: true }),
    );
    return response.hits.hits;
  }

  private get model(): string {
    return this.options.model ?? UNNAMED_MODEL;
  }

  private async ensureMemoryIndex(tenant: string): Promise<void> {
    const alias = aliasName(tenant, this.namespace);
    if (this.knownAliases.has(alias)) return;
    await this.ensureIndex(alias, indexName(tenant, MAPPING_VERSION, this.namespace), await this.memoryIndexBody());
    // An index created before lineage keys were kept lacks the field, and its strict mapping would refuse
    // the documents: adding a field is allowed in place. Documents indexed before keep only their own id,
    // owner and project for holds until the tenant is rebuilt.
    // The same for the subject and session fields neighbours() seeks by (older documents lack them: no neighbours).
    await this.call('put mapping', alias, () =>
      this.client.indices.putMapping({
        index: alias,
        // Vector models, pending marks, subjects and sessions came later still: added the same way.
        properties: {
          lineage: { type: 'keyword' },
          subject: { type: 'keyword' },
          session: { type: 'keyword' },
          vector_model: { type: 'keyword' },
          pending_since: { type: 'date', format: 'epoch_millis' },
        },
      }),
    );
  }

  /** Creates `index` with `alias` unless the alias exists; tolerates another process creating it first. */
  private async ensureIndex(alias: string, index: string, body: object): Promise<void> {
    this.assertOpen();
    if (this.knownAliases.has(alias)) return;
    const exists = await this.call('exists alias', alias, () => this.client.indices.existsAlias({ name: alias }));
    if (!exists) {
      try {
        await this.client.indices.create({ index, ...body, aliases: { [alias]: { is_write_index: true } } });
      } catch (error) {
        if (!isAlreadyExists(error)) throw ElasticsearchIndexError.from(`create ${index}`, error);
        // Created meanwhile, perhaps without the alias (a drop cut short): make sure the alias is there.
        await this.call('put alias', alias, () => this.client.indices.putAlias({ index, name: alias, is_write_index: true }));
      }
    }
    this.knownAliases.add(alias);
  }

  private async memoryIndexBody(): Promise<object> {
    return memoryIndexMapping(this.options.dimensions, {
      keepSourceVectors: dropsSourceVectors(await this.serverVersion()),
      ...(this.options.textAnalyzer ? { textAnalyzer: this.options.textAnalyzer } : {}),
    });
  }

  private serverVersion(): Promise<{ major: number; minor: number }> {
    this.server ??= this.client.info().then(
      (info) => checkServerVersion(info),
      (error: unknown) => {
        this.server = undefined;
        if (error instanceof Error && error.name === 'ProductNotSupportedError')
          throw new Error(`the server at ${displayUrl(this.options.node)} is not Elasticsearch`);
        throw new Error(
          `Elasticsearch at ${displayUrl(this.options.node)} is not reachable (${ElasticsearchIndexError.from('info', error).message})`,
        );
      },
    );
    return this.server;
  }

  /** Names of the indices an alias points at; none when it does not exist. */
  private async indicesOf(alias: string): Promise<string[]> {
    const response = await this.call('get alias', alias, () => this.client.indices.getAlias({ name: alias }, { ignore: [404] }));
    return Object.entries(response as Record<string, { aliases?: Record<string, unknown> }>)
      .filter(([, entry]) => typeof entry === 'object' && entry !== null && entry.aliases && alias in entry.aliases)
      .map(([index]) => index);
  }

  /**
   * Insertion order across calls and processes: microseconds since the epoch,
   * forced up by one when the clock has not moved (or went back) since the last document.
   */
  private nextSeq(): number {
    this.lastSeq = Math.max(Date.now() * 1_000, this.lastSeq + 1);
    return this.lastSeq;
  }

  /**
   * One request, with its errors turned into `ElasticsearchIndexError`s that
   * quote no content. A 503 (a shard not started yet, e.g. of an index another
   * request has just created) or a 429 (back-pressure) is repeated a few times
   * with growing pauses: every request ELMA sends is idempotent.
   */
  /** Several searches of one index in one `_msearch`: the hits of each, in order; a failed one fails the call. */
  private async msearch<T>(alias: string, what: string, bodies: object[]): Promise<estypes.SearchHit<T>[][]> {
    return this.call('msearch', alias, async () => {
      const response = await this.client.msearch<T>({
        searches: bodies.flatMap((body) => [{ index: alias, ignore_unavailable: true }, body]),
      });
      return response.responses.map((r) => {
        if ('error' in r)
          throw new ElasticsearchIndexError(
            `elasticsearch ${what} failed on ${alias}: ${r.error.type} (status ${r.status})`,
            r.status,
            r.error.type,
          );
        return r.hits.hits;
      });
    });
  }

  private async call<T>(operation: string, target: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      this.assertOpen();
      try {
        return await fn();
      } catch (error) {
        if (isIndexNotFound(error))
          throw new ElasticsearchIndexError(`elasticsearch ${operation} on ${target}: index not found`, 404, 'index_not_found_exception');
        const failure = ElasticsearchIndexError.from(`${operation} on ${target}`, error);
        if ((failure.status !== 503 && failure.status !== 429) || attempt >= TRANSIENT_RETRIES) throw failure;
        await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
      }
    }
  }

  private checkVector(vector: Float32Array, what: string): void {
    if (!(vector instanceof Float32Array) || vector.length !== this.options.dimensions || !vector.every(Number.isFinite)) {
      throw new RangeError(`${what} must be a Float32Array of ${this.options.dimensions} finite numbers`);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the memory index is closed');
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
