import { createApi } from '@elma/api';
import { loadConfig, openElma, startTemporalDevServer, type TemporalDevServer } from '@elma/infra';
import { Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createElmaWorker, ensureConsolidationSchedule, ensureRetentionSchedule, startConsolidation, temporalErasureWorkflows } from '@elma/worker';
import { ELMA_SEARCH_ATTRIBUTES } from '@elma/workflows';

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
  if (!mode.worker) {
    if (!config.temporal.address) {
      process.stderr.write('elma api needs TEMPORAL_ADDRESS (host:port of the Temporal front-end); `elma start` runs a dev server instead\n');
      return 2;
    }
    if (config.index === 'sqlite') {
      process.stderr.write('elma api runs without a worker, which the embedded index cannot share between processes: use `elma start`, or ELMA_INDEX=elasticsearch\n');
      return 2;
    }
  }
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
  try {
    let temporal: TemporalDevServer | undefined;
    let address = config.temporal.address;
    if (!address) {
      process.stderr.write('[elma] starting the Temporal dev server...\n');
      temporal = await startTemporalDevServer({
        dbFile: config.temporal.dbFile,
        port: config.temporal.port,
        uiPort: config.temporal.uiPort,
        namespace: config.temporal.namespace,
        searchAttributes: ELMA_SEARCH_ATTRIBUTES,
      });
      stops.push(() => temporal!.stop());
      address = temporal.address;
    }

    const elma = await openElma(config);
    stops.push(() => elma.close());
    await elma.runner.start();

    // Temporal's runtime logs at INFO by default; WARN keeps the console to what an operator must see.
    Runtime.install({ logger: new DefaultLogger('WARN') });
    let running: Promise<void> = Promise.resolve();
    if (mode.worker) {
      const worker = await createElmaWorker({ address, tls: config.temporal.tls, namespace: config.temporal.namespace, taskQueue: config.temporal.taskQueue, deps: { views: elma.views, erasure: elma.erasure, consolidation: elma.consolidation } });
      stops.push(() => worker.shutdown());
      running = worker.run().catch((error: unknown) => {
        elma.logger.error('temporal worker stopped', { name: (error as Error)?.name });
      });
    }

    const temporalClient = await Connection.connect({ address, ...(config.temporal.tls ? { tls: config.temporal.tls } : {}) });
    stops.push(() => temporalClient.close());
    elma.addHealthProbe('temporal', async () => {
      const { status } = await temporalClient.healthService.check({});
      return { engine: temporal ? 'temporal dev server' : 'temporal', up: status === 1, detail: { address } };
    });

    const clientOptions = { connection: temporalClient, namespace: config.temporal.namespace, taskQueue: config.temporal.taskQueue };
    await ensureRetentionSchedule(clientOptions, config.retentionSweepMinutes);
    await ensureConsolidationSchedule(clientOptions, config.consolidation.sweepMinutes);
    elma.projection.setConsolidationTrigger((tenant, subjectRef) => {
      startConsolidation(clientOptions, tenant, subjectRef).catch((error: unknown) =>
        elma.logger.error('could not start a consolidation', { name: (error as Error)?.name }),
      );
    }, config.consolidation.everyEvents);
    const app = await createApi(elma, { erasures: temporalErasureWorkflows(clientOptions) });
    stops.push(() => app.close());
    await app.listen({ port: config.port, host: config.host });
    const api = `http://${config.host}:${config.port}`;

    process.stdout.write(
      [
        '',
        `ELMA is running (event log: ${config.eventLog}, index: ${config.index}${mode.worker ? ', with a worker' : ', API only'})`,
        `  API        ${api}/v1`,
        `  GraphQL    ${api}/graphql`,
        `  OpenAPI    ${api}/docs`,
        `  Health     ${api}/health`,
        `  Temporal   ${address}${temporal?.uiUrl ? `  (Web UI ${temporal.uiUrl})` : ''}`,
        `  Data       ${config.dataDir}`,
        '  Token      npm run elma -- token --tenant acme --purposes support',
        'Press Ctrl-C to stop.',
        '',
      ].join('\n'),
    );

    await new Promise<void>((resolve) => {
      const onSignal = () => resolve();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
    });
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
