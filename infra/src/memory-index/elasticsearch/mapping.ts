import {
  FORMAT_VERSIONS,
  SENSITIVITY_RANK,
  dateText,
  entityToken,
  indexKeyOf,
  restrictionKeys,
  scopeKeys,
  transactionTime,
  type MemoryRecord,
} from '@elma/domain';

/**
 * Bumped whenever a change to `memoryIndexMapping` or to what a document
 * holds needs a reindex: the new index is built beside the old one and the
 * alias moved when it is complete. 2: `text` carries the date words of the
 * record's valid day (`searchableText`); a tenant indexed at 1 keeps working,
 * its older documents are found by date only once it is reindexed.
 */
export const MAPPING_VERSION: number = FORMAT_VERSIONS.elasticsearchMapping;

/** Elasticsearch's limit for an indexed dense_vector. */
const MAX_DIMENSIONS = 4096;

/** The prefix of every index and alias name unless another namespace is given. */
export const DEFAULT_NAMESPACE = 'elma';

/**
 * Tenant ids become part of index and alias names, so they are checked here
 * again: a name with `*` or `,` would address several tenants' indices (or
 * none), upper case is refused by Elasticsearch, and a leading `-` or `_`
 * reads as an exclusion or a system name. Hyphens inside are fine
 * (`tenant-a`); names are built and split with fixed prefixes and suffixes
 * (`tenantOfAlias`), never by splitting on `-`.
 */
const TENANT = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * A namespace has no hyphen, so `elma-*` can never reach another namespace's
 * indices (`elma_test1-...`): listings and refreshes stay inside their own.
 */
const NAMESPACE = /^[a-z][a-z0-9_]{0,31}$/;

function tenantPart(tenant: string): string {
  if (!TENANT.test(tenant)) throw new RangeError(`tenant ${JSON.stringify(tenant)} cannot name an Elasticsearch index`);
  return tenant;
}

export function checkNamespace(namespace: string): string {
  if (!NAMESPACE.test(namespace)) throw new RangeError(`namespace ${JSON.stringify(namespace)} must match ${NAMESPACE.source}`);
  return namespace;
}

/** The concrete index of one tenant at one mapping version, as first created on a write. */
export const indexName = (tenant: string, version: number, namespace = DEFAULT_NAMESPACE): string => {
  if (!Number.isInteger(version) || version < 1) throw new RangeError('mapping version must be a positive integer');
  return `${checkNamespace(namespace)}-${tenantPart(tenant)}-memories-v${version}`;
};

/** A concrete index built by a reindex; `stamp` (digits) keeps it apart from the one it replaces. */
export const reindexName = (tenant: string, version: number, stamp: string, namespace = DEFAULT_NAMESPACE): string => {
  if (!/^[0-9]{1,20}$/.test(stamp)) throw new RangeError('reindex stamp must be digits');
  return `${indexName(tenant, version, namespace)}-r${stamp}`;
};

/** The alias every read and write goes through, so a reindex swaps versions atomically. */
export const aliasName = (tenant: string, namespace = DEFAULT_NAMESPACE): string =>
  `${checkNamespace(namespace)}-${tenantPart(tenant)}-memories`;

/** Usage counts live in their own index per tenant, beside the records: a use is not a new version, and a reindex keeps them. */
export const usageAliasName = (tenant: string, namespace = DEFAULT_NAMESPACE): string =>
  `${checkNamespace(namespace)}-${tenantPart(tenant)}-usage`;
export const usageIndexName = (tenant: string, namespace = DEFAULT_NAMESPACE): string => `${usageAliasName(tenant, namespace)}-v1`;

/** Projection checkpoints of the whole namespace. */
export const checkpointAliasName = (namespace = DEFAULT_NAMESPACE): string => `${checkNamespace(namespace)}-checkpoints`;
export const checkpointIndexName = (namespace = DEFAULT_NAMESPACE): string => `${checkpointAliasName(namespace)}-v1`;

/** The wildcard that lists every tenant's memory alias of a namespace (see `tenantOfAlias`). */
export const aliasPattern = (namespace = DEFAULT_NAMESPACE): string => `${checkNamespace(namespace)}-*-memories`;

/** The tenant a memory alias belongs to, or undefined for a name that is not one. */
export function tenantOfAlias(alias: string, namespace = DEFAULT_NAMESPACE): string | undefined {
  const prefix = `${checkNamespace(namespace)}-`;
  const suffix = '-memories';
  if (!alias.startsWith(prefix) || !alias.endsWith(suffix)) return undefined;
  const tenant = alias.slice(prefix.length, alias.length - suffix.length);
  return TENANT.test(tenant) ? tenant : undefined;
}

export interface IndexSettingsOptions {
  /**
   * Elasticsearch 9.2 and later leave dense vectors out of `_source` by
   * default and rebuild them from the vector index on read, which for a
   * cosine field need not give back the exact floats written; the port
   * returns vectors as stored, so they are kept in `_source`. Older servers
   * reject the setting, hence an option.
   */
  keepSourceVectors?: boolean;
  /**
   * Analyzer of the main text field; `english` (stemming, English stop
   * words) by default, the `cjk` sub-field beside it either way. Another
   * built-in language analyzer suits a tenant writing mostly in that language.
   */
  textAnalyzer?: string;
}

/**
 * The body that creates one tenant's index (settings + mappings). `dynamic:
 * strict` rejects a document with a field not mapped here, rather than
 * guessing a type that a filter would then compare wrongly.
 */
export function memoryIndexMapping(dimensions: number, options: IndexSettingsOptions = {}) {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > MAX_DIMENSIONS) {
    throw new RangeError(`dimensions must be an integer from 1 to ${MAX_DIMENSIONS}`);
  }
  const keyword = { type: 'keyword' } as const;
  const date = { type: 'date', format: 'epoch_millis' } as const;
  return {
    settings: {
      index: {
        number_of_shards: 1,
        // Purge ends with a forcemerge that expunges deletes; by default it skips segments with fewer than
        // 10 % deleted documents, which would leave a purged record's bytes in them. 0: every such segment.
        merge: { policy: { expunge_deletes_allowed: 0 } },
        ...(options.keepSourceVectors ? { mapping: { exclude_source_vectors: false } } : {}),
      },
    },
    mappings: {
      dynamic: 'strict',
      _meta: { mapping_version: MAPPING_VERSION },
      properties: {
        id: keyword,
        kind: keyword,
        status: keyword,
        owner: keyword,
        project: keyword,
        retention_class: keyword,
        // Multi-valued: a `terms` query on it is "any of".
        purposes: keyword,
        // Multi-valued: `restrictionKeys`, what a legal hold can name of the record and its ancestors.
        lineage: keyword,
        // Multi-valued: `scopeKeys`, what a recall's `filter` can narrow to (subjects, entities, projects, sessions, sources).
        scope: keyword,
        fact_key: keyword,
        // A record's subject and conversation: what `neighbours` looks records up by.
        subject: keyword,
        session: keyword,
        sensitivity_rank: { type: 'integer' },
        version: { type: 'integer' },
        // Insertion order (SQLite's rowid): `records` and `lineage` page by it.
        seq: { type: 'long' },
        tokens: { type: 'integer', index: false },
        valid_from: date,
        valid_to: date,
        recorded_at: date,
        expires_at: date,
        tx_from: date,
        tx_to: date,
        text: { type: 'text', analyzer: options.textAnalyzer ?? 'english', fields: { cjk: { type: 'text', analyzer: 'cjk' } } },
        vector: {
          type: 'dense_vector',
          dims: dimensions,
          index: true,
          similarity: 'cosine',
          index_options: { type: 'hnsw', m: 16, ef_construction: 100 },
        },
        // The embedder model (id with its version) that made `vector`: kNN only ever searches the configured one.
        vector_model: keyword,
        // Set while the document waits for its vector (BM25 finds it meanwhile); removed by setVectors.
        pending_since: date,
        // Returned as stored, never searched: the filter fields above are what queries see.
        record: { type: 'object', enabled: false },
      },
    },
  } as const;
}

/** A tenant's usage counts: one document per record id, rewritten on each use (see `usageOperations`). */
export function usageIndexMapping() {
  return {
    settings: { index: { number_of_shards: 1, merge: { policy: { expunge_deletes_allowed: 0 } } } },
    mappings: {
      dynamic: 'strict',
      properties: {
        id: { type: 'keyword' },
        retrieved: { type: 'long' },
        adopted: { type: 'long' },
        last_used_at: { type: 'date', format: 'epoch_millis' },
      },
    },
  } as const;
}

/** Checkpoints by name (the document id). Positions are decimal strings: a bigint may exceed what a double or a long holds. */
export function checkpointIndexMapping() {
  return {
    settings: { index: { number_of_shards: 1 } },
    mappings: { dynamic: 'strict', properties: { position: { type: 'keyword', index: false } } },
  } as const;
}

/** One version of a record as the index stores it. Times are epoch milliseconds; null is a missing field. */
export interface MemoryDocument {
  id: string;
  kind: string;
  status: string;
  owner: string;
  project: string | null;
  retention_class: string;
  purposes: string[];
  /** `restrictionKeys` of the record. Absent on documents indexed before lineage keys were kept (mapping version 1). */
  lineage?: string[];
  /** `scopeKeys` of the record. Absent on documents indexed before scopes (mapping version 2): a rebuild writes them. */
  scope?: string[];
  fact_key: string | null;
  /** Absent on documents indexed before neighbours were looked up (they have none until the tenant is reindexed). */
  subject?: string;
  session?: string | null;
  sensitivity_rank: number;
  version: number;
  /** Insertion order, set by the adapter when it writes the document. */
  seq?: number;
  tokens?: number;
  valid_from: number;
  valid_to: number | null;
  recorded_at: number;
  expires_at: number | null;
  /** Transaction time from which this version was current. */
  tx_from: number;
  /** When a later version replaced it; null while it is the current version. */
  tx_to: number | null;
  text: string;
  /** Absent for a zero vector, which a cosine field rejects (it has no direction, so the dense route could never rank it). */
  vector?: number[];
  /** The model that made the vector; absent while the document waits for one (and on documents from before). */
  vector_model?: string;
  /** Since when the document waits for its vector (absent once it has one). */
  pending_since?: number;
  record: MemoryRecord;
}

/** The fields that `setVectors` gives a pending document (a zero vector is left out, as `toDocument` does). */
export function vectorFields(vector: Float32Array, model: string): Pick<MemoryDocument, 'vector' | 'vector_model'> {
  return { ...(vector.some((x) => x !== 0) ? { vector: Array.from(vector) } : {}), vector_model: model };
}

/** The current version of a record as a document (`tx_to` null; the adapter closes it when a later version arrives). */
/** The model name of an index whose options name none. */
export const UNNAMED_MODEL = 'unnamed';

/** Without a vector the document is pending (since `pendingSince`, epoch ms) until `setVectors` gives it one of `model`. */
export function toDocument(
  record: MemoryRecord,
  vector: Float32Array | undefined,
  tokens?: number,
  model: string = UNNAMED_MODEL,
  pendingSince: number = Date.now(),
): MemoryDocument {
  return {
    id: record.id,
    kind: record.kind,
    status: record.status,
    owner: record.policy.owner,
    project: record.policy.project ?? null,
    retention_class: record.retention.class,
    purposes: [...record.policy.purposes],
    lineage: restrictionKeys(record),
    scope: scopeKeys(record),
    fact_key: indexKeyOf(record),
    subject: record.subject,
    session: record.session ?? null,
    sensitivity_rank: SENSITIVITY_RANK[record.policy.sensitivity],
    version: record.version,
    ...(tokens !== undefined ? { tokens } : {}),
    valid_from: millis(record.validFrom, 'validFrom'),
    valid_to: record.validTo === null ? null : millis(record.validTo, 'validTo'),
    recorded_at: millis(record.recordedAt, 'recordedAt'),
    expires_at: record.retention.expiresAt === null ? null : millis(record.retention.expiresAt, 'expiresAt'),
    tx_from: millis(transactionTime(record), 'revisedAt'),
    tx_to: null,
    text: searchableText(record),
    ...(vector ? vectorFields(vector, model) : { pending_since: pendingSince }),
    record,
  };
}

/**
 * What BM25 sees, as `documentTerms` in the SQLite target: the text, a
 * fact's parts, the date words of the record's valid day in English and
 * Chinese (`dateText`), and for an edge one word per endpoint
 * (`entityToken`), by which recall follows relations. Stemming and English
 * stop words are left to the mapping's analyzers.
 */
function searchableText(record: MemoryRecord): string {
  const { text, fact, relation } = record.content;
  const parts = [text];
  if (fact) parts.push(`${fact.entity} ${fact.attribute} ${fact.value}`);
  const date = dateText(record.validFrom);
  if (date) parts.push(date);
  if (relation) parts.push(`${entityToken(relation.from)} ${entityToken(relation.to)}`);
  return parts.join('\n');
}

export function millis(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`${field} is not a valid ISO date-time`);
  return ms;
}
