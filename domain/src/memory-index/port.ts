import { DomainError } from '../shared/errors';
import type { MemoryKind, MemoryRecord, MemoryStatus, Sensitivity } from '../memory/record';
import type { ReadClause, ReadExclusions } from '../policy/clause';
import type { Fusion, RouteContributions } from '../recall/fusion';
import type { StoredUsage } from '../quota/quota';
import type { ListPosition } from '../memory/listing';

/**
 * A memory as the index stores it: the record (plaintext, as views must be)
 * plus its vector. Without a vector the record is not embedded yet: the BM25
 * route finds it at once, the dense route once `setVectors` gave it one.
 */
export interface IndexedMemory {
  record: MemoryRecord;
  vector?: Float32Array;
  /** The embedder model (id with its version) that made `vector`; absent: the index's configured model. */
  model?: string;
}

/** A record waiting for its vector: what the embedding stage embeds (as a document) and hands back with `setVectors`. */
export interface PendingEmbedding {
  id: string;
  version: number;
  text: string;
}

/** A vector for one version of a record, made by `model`. */
export interface EmbeddedVector {
  id: string;
  version: number;
  vector: Float32Array;
  model: string;
}

/** How far the vectors are behind the records (per tenant, or summed over the tenants). */
export interface EmbeddingLag {
  /** Current records without a vector of the configured model. */
  pending: number;
  /** When the oldest of them became pending (ISO 8601), absent when none is. */
  oldestPendingAt?: string;
  /**
   * Tenants whose stored vectors were made by another model than the
   * configured one: their dense route answers nothing and nothing is
   * re-embedded until the tenant is reindexed (`elma reindex`).
   */
  reindexNeeded: string[];
}

/**
 * What the caller narrows a search or listing to (a recall's `filter`), on top
 * of its policy: different keys combine with AND, the values of one key with
 * OR, and an empty list admits nothing. What each key matches of a record is
 * `scopeKeys` (domain/memory-index/scope); `occurredAfter <= validFrom <
 * occurredBefore`.
 */
export interface IndexScope {
  /** The record's subject, or an owner in its ancestry (a record derived from several subjects' records joins each). */
  subjects?: readonly string[];
  /** The entity of its fact, or either end of its relation. */
  entities?: readonly string[];
  /** Its project, or a project in its ancestry. */
  projects?: readonly string[];
  /** Its session, or a session in its ancestry (a summary of a session's turns). */
  sessions?: readonly string[];
  /** A source of its events: each item matches the system, the channel, or both it names. */
  sources?: readonly { system?: string; channel?: string }[];
  occurredAfter?: string;
  occurredBefore?: string;
}

/** Filters pushed down into the index query, so that a record outside them never leaves the index. */
export interface IndexFilter {
  kinds?: MemoryKind[];
  statuses: readonly MemoryStatus[];
  /** Highest sensitivity the caller may see (inclusive). */
  maxSensitivity: Sensitivity;
  /** Records must list at least one of these purposes. Omit for no purpose restriction. */
  purposes?: string[];
  /** Business-valid time: validFrom <= asOf < validTo (open end when validTo is null). */
  asOf?: string;
  /**
   * Transaction time: what the index held at `knownAsOf`, i.e. for each
   * record the version that was current then (recorded, or revised, at or
   * before it, and not yet replaced). Absent: the current versions.
   */
  knownAsOf?: string;
  /** Records with retention.expiresAt <= now are never returned. */
  now: string;
  /**
   * The caller's compiled read policy: a record must satisfy at least one
   * clause. Absent: no policy constraint (internal callers only); an empty
   * list admits nothing.
   */
  clauses?: ReadClause[];
  /** Records withheld whatever the clauses say. */
  exclude?: ReadExclusions;
  /** The caller's scope: it only narrows what the rest admits. */
  scope?: IndexScope;
  /**
   * Working memories are admitted only from this session. Recall sets it for its caller's session, so that
   * another session's working memories, which it may never see, take no candidate's place. Absent: any session.
   */
  workingSession?: string;
}

export interface HybridQuery {
  tenant: string;
  /** Free text for BM25; tokenised with the shared tokenizer. Empty disables the route. */
  text: string;
  /** Query vector for the dense route; omit to disable it. */
  vector?: Float32Array;
  /** How many fused hits to return. */
  limit: number;
  filter: IndexFilter;
  /** How the routes are fused; absent: equal-weight reciprocal rank fusion with no dense floor. */
  fusion?: Fusion;
  /**
   * Neighbour smoothing inside the search (`smoothedSearch`, domain/recall/smoothing): the best `pool`
   * fused hits are each lifted by `factor` times the better score of their conversation neighbours under
   * the same filter, neighbours that were no hit join with what they gain, and the best `limit` are
   * returned. An adapter may rank on row ids and read only the records it returns. Absent: no smoothing.
   */
  smoothing?: { factor: number; pool: number };
  /**
   * The conversation lift inside the search (`liftPool`, domain/recall/evidence), after smoothing: the best
   * `pool` of the ranked hits each gain by how much evidence their conversation holds among them, and the
   * best `limit` are returned. With smoothing the hits are what smoothing ranked (its pool and the
   * neighbours that joined: the routes search no deeper); without, the fused pool widens to `pool`
   * (`rankedPool`). An adapter may rank on row ids and read only the records it returns. Absent: no lift.
   */
  conversation?: { weight: number; depth: number; pool: number };
}

/**
 * A page of a tenant's records in listing order (`compareListed`: first
 * recorded first, then by id), as `MemoryIndex.list` reads it.
 */
export interface ListQuery {
  tenant: string;
  /** Applied inside the query, exactly as `search` applies it: a record outside it is never read. */
  filter: IndexFilter;
  /** Only records about this data subject. */
  subject?: string;
  /**
   * Working memories are admitted only when `owner` owns them or, with a
   * `session`, when they belong to that session. Absent: no such restriction
   * (internal callers only).
   */
  working?: { owner: string; session?: string };
  /** Only records after this one in listing order; absent: from the first. */
  after?: ListPosition;
  /** At most this many records. */
  limit: number;
}

export interface SearchHit {
  record: MemoryRecord;
  /** Absent while the record waits for its vector (found by BM25 only). */
  vector?: Float32Array;
  /** Fused score (higher is better): see `HybridQuery.fusion`. */
  score: number;
  /** 1-based rank in each route, when the hit came from it. */
  bm25Rank?: number;
  vectorRank?: number;
  /** Cosine similarity of the hit to the query vector, when a vector was given. */
  cosine?: number;
  /** The BM25 route's raw score (higher is better), when the hit came from that route. */
  bm25Score?: number;
  /**
   * What each route added to the fused score (`FusedScore.contributions`), present for the routes that found
   * the hit; absent on a neighbour that joined by smoothing alone.
   */
  contributions?: RouteContributions;
  /**
   * What neighbour smoothing added to `score` (absent: nothing), and the id of the record next to it whose
   * score lent it (may be absent when that record is not among the hits returned).
   */
  smoothing?: { lift: number; neighbourOf?: string };
  /** What the conversation lift (`HybridQuery.conversation`) added to `score`; absent: nothing. */
  conversation?: { lift: number };
  /**
   * Tokens of `record.content.text` (o200k) when the index keeps them: counted at indexing, or by the
   * embedding stage's write when a record is indexed without its vector (SQLite). Absent otherwise: the caller counts.
   */
  tokens?: number;
}

/** A memory next to another in its conversation, as `neighbours()` returns it. */
export interface NeighbourMemory {
  record: MemoryRecord;
  /** Absent while the record waits for its vector. */
  vector?: Float32Array;
  tokens?: number;
}

/** The memories just before and after a record in its conversation (either may be absent). */
export interface Neighbours {
  id: string;
  previous?: NeighbourMemory;
  next?: NeighbourMemory;
}

/** A record as `lineage()` lists it. */
export interface LineageEntry {
  id: string;
  kind: MemoryKind;
  subject: string;
  owner: string;
  rule: string;
  sourceEventIds: string[];
  parentIds: string[];
  recordedAt: string;
  expiresAt: string | null;
  project?: string;
  /** The embedder model (id with its version) that made the record's vector; absent while it is not embedded. */
  vectorModel?: string;
}

/** One erased record, as erasure verification probes the index for it (see `MemoryIndex.leftovers`). */
export interface ErasedProbe {
  id: string;
  /** Its content text: the full-text index is probed for every word of it. */
  text: string;
  /** Its vector; absent when it was erased before it was embedded. */
  vector?: Float32Array;
}

/** Which of the probed records the index still holds something of, by place (ids of the probes). */
export interface Leftovers {
  /** A stored row or document under the id, in any version. */
  rows: string[];
  /** A full-text entry holding every word of the text, of a removed row or of a row under a probed id. */
  terms: string[];
  /** A vector at least `minCosine` similar to the probe's, of a removed row or of a row under a probed id. */
  vectors: string[];
  /** Probes whose text a current record outside the probes holds verbatim: its bytes legitimately remain. */
  sharedText: string[];
}

export interface MemoryIndex {
  /**
   * Stores records as their ids' current versions, atomically per call.
   * Idempotent: the same version again replaces it; a higher version makes
   * the previous one history (still found by `knownAsOf` queries); a lower
   * version than the current one is ignored.
   */
  upsert(tenant: string, memories: IndexedMemory[]): Promise<void>;

  /** The current version of the record with this id in the tenant's partition, or undefined. */
  get(tenant: string, id: string): Promise<IndexedMemory | undefined>;

  /**
   * BM25 and dense routes fused with RRF, filters applied inside each route.
   * The BM25 route also matches an edge (a record with `content.relation`)
   * by the `entityToken` of either endpoint (domain/memory/kinds).
   */
  search(query: HybridQuery): Promise<SearchHit[]>;

  /**
   * For each id the filter admits, the records just before and just after it
   * in valid time (ties in insertion order: a conversation's turns often share
   * a time) among the episodic records of the same
   * conversation (`sameConversation`, domain/recall/smoothing: same subject,
   * same `session`, or without one at most CONVERSATION_GAP_MS apart) that
   * the filter admits. The filter is applied before adjacency, exactly as in
   * `search`: a record the caller may not see is skipped as if it did not
   * exist, never returned. Ids the filter does not admit, or that are not
   * episodic, are left out.
   */
  neighbours(tenant: string, ids: string[], filter: IndexFilter): Promise<Neighbours[]>;

  /**
   * Up to `limit` records the query admits, after `after`, in listing order
   * (recordedAt, then id). The filter is applied before the limit, so a page
   * is short only at the end of the listing: a record the caller may not see
   * never takes a place in it. Current versions, unless the filter's
   * `knownAsOf` asks for the versions current then.
   */
  list(query: ListQuery): Promise<MemoryRecord[]>;

  /**
   * Every stored version of the record with this id in the tenant's
   * partition, oldest first (by version), whatever their status: the current
   * one and those it replaced. Empty for an unknown or purged id.
   */
  versions(tenant: string, id: string): Promise<MemoryRecord[]>;

  /**
   * Physically removes the records, every version: rows, FTS entries and
   * vectors, including the vector graph's copies, so no byte of them remains
   * in the index files.
   */
  purge(tenant: string, ids: string[]): Promise<void>;

  /**
   * The byte forms in which the index's files hold a vector `get` returned,
   * for the erasure byte scan to look for. Absent: its float32 bytes only.
   */
  storedVectorForms?(vector: Float32Array): Buffer[];

  /**
   * Every record of the tenant's partition (any status), in insertion order,
   * read in batches. For whole-tenant work that is rare by nature: erasure
   * lookups, retention sweeps.
   */
  records(tenant: string): AsyncIterable<MemoryRecord>;

  /**
   * Identity, ownership, times and lineage of every record of the tenant
   * (any status), without content: what erasure needs to locate records and
   * compute a deletion closure, cheaply.
   */
  lineage(tenant: string): AsyncIterable<LineageEntry>;

  /**
   * The lineage entries (current versions, insertion order, as `lineage`
   * lists them) of the records with one of `ids`, whose parent records or
   * source events include one of `ids`, or whose subject or owner is one of
   * `subjects`: what an erasure's closure walk and locate need, looked up
   * rather than read from the whole partition.
   */
  lineageOf(tenant: string, match: { ids?: readonly string[]; subjects?: readonly string[] }): Promise<LineageEntry[]>;

  /**
   * What the index still holds of these erased records, in one call for the
   * batch (erasure verification). Exact where a search is not: a leftover
   * full-text entry or vector of a removed row is joined to no row, so no
   * query would return it, yet it is found here.
   */
  leftovers(tenant: string, probes: ErasedProbe[], options: { minCosine: number }): Promise<Leftovers>;

  /**
   * Current versions of the tenant's records stating a fact about this
   * entity and attribute (`factKey` of domain/memory/conflicts), any status:
   * what a new fact is checked against for conflicts. With a `procedureKey`
   * (domain/memory/kinds), the current versions of that procedure's records:
   * what a new procedure version is checked against.
   */
  currentFacts(tenant: string, factKey: string): Promise<MemoryRecord[]>;

  /**
   * Counts a use of these records (`retrieved`: packed into a recall;
   * `adopted`: the caller said it used them), kept beside the records so a
   * use does not make a new version. Records returned afterwards carry the
   * counts in `usage`. Unknown ids are ignored.
   */
  recordUsage(tenant: string, ids: string[], use: 'retrieved' | 'adopted', at: string): Promise<void>;

  /**
   * Up to `limit` current records of the tenant without a vector of the
   * configured model, oldest pending first: the embedding stage's work.
   */
  pendingEmbeddings(tenant: string, limit: number): Promise<PendingEmbedding[]>;

  /**
   * Stores vectors for records, each only if the record is still current at
   * that version and the vector was made by the configured model; anything
   * else (a newer version, a purged id, another model) is ignored.
   */
  setVectors(tenant: string, items: EmbeddedVector[]): Promise<void>;

  /** The embedding lag of one tenant, or of all of them. */
  embeddingLag(tenant?: string): Promise<EmbeddingLag>;

  /** The tenants that have a partition. */
  tenants(): Promise<string[]>;

  /** Number of records in the tenant's partition. */
  count(tenant: string): Promise<number>;

  /**
   * What the tenant's records hold as the storage quotas count it: how many
   * there are (any status) and their content's bytes (`contentBytes`), the
   * sum of the same over `records()`. Counted where the records are, without
   * handing each one over.
   */
  storedUsage(tenant: string): Promise<StoredUsage>;

  /**
   * Drops the tenant's whole partition (used before a rebuild). Never reads
   * it: a partition quarantined as corrupt is dropped as it is, and the
   * quarantine is lifted.
   */
  dropTenant(tenant: string): Promise<void>;

  close(): Promise<void>;
}

/** Durable projection checkpoints (the last global log position a projection has fully applied). */
export interface CheckpointStore {
  load(name: string): Promise<bigint | undefined>;
  save(name: string, position: bigint): Promise<void>;
}

/**
 * A tenant's index partition is damaged (its files fail the engine's own
 * checks). The partition is quarantined: every call for that tenant fails
 * with this error at once, the other tenants are unaffected, and a rebuild
 * of the tenant (drop, then replay of its log) lifts it. Carries the tenant
 * id only, never content.
 */
export class IndexPartitionCorrupt extends DomainError {
  constructor(readonly tenant: string) {
    super(
      'INDEX.PARTITION_CORRUPT',
      `the index partition of tenant ${tenant} is corrupt and quarantined; rebuild it with \`elma rebuild --tenant ${tenant}\``,
      {
        tenant,
      },
    );
  }
}
