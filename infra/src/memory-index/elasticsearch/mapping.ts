import { SENSITIVITY_RANK, entityToken, indexKeyOf, transactionTime, type MemoryRecord } from '@elma/domain';

/**
 * Bumped whenever a change to `memoryIndexMapping` needs a reindex: the new
 * index is built beside the old one and the alias moved when it is complete.
 */
export const MAPPING_VERSION = 1;

/** Elasticsearch's limit for an indexed dense_vector. */
const MAX_DIMENSIONS = 4096;

/**
 * Tenant ids are already restricted (`[a-z0-9][a-z0-9_]{0,62}`, domain/auth);
 * this is checked again here because an index or alias name with `*`, `,` or
 * upper case would address several tenants' indices, or none.
 */
const TENANT = /^[a-z0-9][a-z0-9_]{0,62}$/;

function tenantPart(tenant: string): string {
  if (!TENANT.test(tenant)) throw new RangeError(`tenant ${JSON.stringify(tenant)} cannot name an Elasticsearch index`);
  return tenant;
}

/** The concrete index of one tenant at one mapping version. */
export const indexName = (tenant: string, version: number): string => {
  if (!Number.isInteger(version) || version < 1) throw new RangeError('mapping version must be a positive integer');
  return `elma-${tenantPart(tenant)}-memories-v${version}`;
};

/** The alias every read and write goes through, so a reindex swaps versions atomically. */
export const aliasName = (tenant: string): string => `elma-${tenantPart(tenant)}-memories`;

/**
 * The body that creates one tenant's index (settings + mappings). `dynamic:
 * strict` rejects a document with a field not mapped here, rather than
 * guessing a type that a filter would then compare wrongly.
 */
export function memoryIndexMapping(dimensions: number) {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > MAX_DIMENSIONS) {
    throw new RangeError(`dimensions must be an integer from 1 to ${MAX_DIMENSIONS}`);
  }
  const keyword = { type: 'keyword' } as const;
  const date = { type: 'date', format: 'epoch_millis' } as const;
  return {
    settings: { index: { number_of_shards: 1 } },
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
        fact_key: keyword,
        sensitivity_rank: { type: 'integer' },
        version: { type: 'integer' },
        tokens: { type: 'integer', index: false },
        valid_from: date,
        valid_to: date,
        recorded_at: date,
        expires_at: date,
        tx_from: date,
        tx_to: date,
        text: { type: 'text', analyzer: 'english', fields: { cjk: { type: 'text', analyzer: 'cjk' } } },
        vector: {
          type: 'dense_vector',
          dims: dimensions,
          index: true,
          similarity: 'cosine',
          index_options: { type: 'hnsw', m: 16, ef_construction: 100 },
        },
        // Returned as stored, never searched: the filter fields above are what queries see.
        record: { type: 'object', enabled: false },
      },
    },
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
  fact_key: string | null;
  sensitivity_rank: number;
  version: number;
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
  vector: number[];
  record: MemoryRecord;
}

/** The current version of a record as a document (`tx_to` null; the adapter closes it when a later version arrives). */
export function toDocument(record: MemoryRecord, vector: Float32Array, tokens?: number): MemoryDocument {
  return {
    id: record.id,
    kind: record.kind,
    status: record.status,
    owner: record.policy.owner,
    project: record.policy.project ?? null,
    retention_class: record.retention.class,
    purposes: [...record.policy.purposes],
    fact_key: indexKeyOf(record),
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
    vector: Array.from(vector),
    record,
  };
}

/**
 * What BM25 sees: the text, a fact's parts, and for an edge one word per
 * endpoint (`entityToken`), as in the SQLite target, by which recall follows
 * relations. Analysis is left to the mapping's analyzers.
 */
function searchableText(record: MemoryRecord): string {
  const { text, fact, relation } = record.content;
  const parts = [text];
  if (fact) parts.push(`${fact.entity} ${fact.attribute} ${fact.value}`);
  if (relation) parts.push(`${entityToken(relation.from)} ${entityToken(relation.to)}`);
  return parts.join('\n');
}

export function millis(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`${field} is not a valid ISO date-time`);
  return ms;
}
