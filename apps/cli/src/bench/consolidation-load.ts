import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createApi } from '@elma/api';
import type { Principal } from '@elma/domain';
import { loadConfig, mintToken, openElma, silentLogger, startTemporalDevServer, type TemporalDevServer } from '@elma/infra';
import { Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createElmaWorker, runConsolidationSweep } from '@elma/worker';
import { ELMA_SEARCH_ATTRIBUTES } from '@elma/workflows';
import { prng, query, sentence } from './corpus';

export interface LatencyFigures {
  requests: number;
  errors: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  /** The event loop's own delay over the phase (99th percentile): how long any request waited for the process. */
  loopDelayP99Ms: number;
}

export interface RecallDuringSweep {
  events: number;
  subjects: number;
  clients: number;
  idle: LatencyFigures;
  /** Recalls measured while the sweep ran (until it ended or `seconds` passed). */
  duringSweep: LatencyFigures;
  /** How long the sweep took, or null when it was still running at the end of the measurement. */
  sweepMs: number | null;
  sweepSubjects: number | null;
}

export interface RecallDuringSweepOptions {
  /** Events ingested before measuring, spread over `subjects` subjects of one tenant. */
  events?: number;
  subjects?: number;
  /** Concurrent HTTP clients doing recalls in each phase. */
  clients?: number;
  /** Length of each phase. */
  seconds?: number;
  /** A running Temporal front end; by default a dev server is started for the measurement. */
  temporalAddress?: string;
  log?: (line: string) => void;
}

const TENANT = 'bench_sweep';
const principal: Principal = { tenant: TENANT, sub: 'bench', roles: ['agent'], purposes: ['support'], clearance: 'internal' };

/**
 * Recall latency over real HTTP with and without a consolidation sweep
 * running, on the embedded engines and in one process, as `elma start` runs
 * them (API, projection and Temporal worker together): the sweep competes
 * with recalls for the same event loop and cores.
 */
export async function measureRecallDuringSweep(options: RecallDuringSweepOptions = {}): Promise<RecallDuringSweep> {
  const events = options.events ?? 4_000;
  const subjects = options.subjects ?? 400;
  const clients = options.clients ?? 8;
  const seconds = options.seconds ?? 20;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-sweep-bench-'));
  const stops: (() => Promise<unknown>)[] = [];
  try {
    let address = options.temporalAddress;
    if (!address) {
      const temporal: TemporalDevServer = await startTemporalDevServer({ headless: true, dbFile: join(dataDir, 'temporal.db'), searchAttributes: ELMA_SEARCH_ATTRIBUTES });
      stops.push(() => temporal.stop());
      address = temporal.address;
    }
    const config = loadConfig({ ELMA_DATA_DIR: dataDir, ELMA_PORT: '0', ELMA_TEMPORAL_DB_FILE: join(dataDir, 'temporal.db') });
    const elma = await openElma(config, { logger: silentLogger });
    stops.push(() => elma.close());
    await elma.runner.start();

    const random = prng(7);
    log(`[sweep-bench] ingesting ${events} events over ${subjects} subjects`);
    let position = 0n;
    for (let done = 0; done < events; done += 100) {
      const batch = Array.from({ length: Math.min(100, events - done) }, (_, i) => ({
        subject: `subject-${(done + i) % subjects}`,
        // A few days per subject, so the sweep has sessions to summarise.
        occurredAt: new Date(Date.UTC(2026, 0, 1) + ((done + i) % 5) * 86_400_000 + (done + i) * 1_000).toISOString(),
        activity: 'chat.turn',
        content: { text: sentence(random, random() < 0.5) },
        source: { system: 'bench', externalId: `sweep-${done + i}`, channel: 'chat' },
        purposes: ['support'],
      }));
      position = BigInt((await elma.ingest.ingest(principal, { events: batch })).position);
    }
    await elma.runner.waitFor(position, 600_000);

    Runtime.install({ logger: new DefaultLogger('ERROR') });
    const worker = await createElmaWorker({ address, deps: { views: elma.views, erasure: elma.erasure, consolidation: elma.consolidation } });
    const running = worker.run();
    stops.push(async () => {
      await worker.shutdown();
      await running.catch(() => undefined);
    });
    const connection = await Connection.connect({ address });
    stops.push(() => connection.close());
    const app = await createApi(elma);
    stops.push(() => app.close());
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}/v1/recall`;
    const token = await mintToken(config.jwtSecret, principal);

    const load = async (until: () => boolean): Promise<LatencyFigures> => {
      const latencies: number[] = [];
      let errors = 0;
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const client = async (seed: number) => {
        const r = prng(seed);
        while (!until()) {
          const started = performance.now();
          const response = await fetch(url, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ query: query(r), purpose: 'support', budgetTokens: 300 }),
          });
          await response.arrayBuffer();
          if (response.status === 200) latencies.push(performance.now() - started);
          else errors++;
        }
      };
      await Promise.all(Array.from({ length: clients }, (_, i) => client(100 + i)));
      delay.disable();
      return { requests: latencies.length, errors, ...percentiles(latencies), loopDelayP99Ms: Math.round(delay.percentile(99) / 1e6) };
    };

    log(`[sweep-bench] recall, ${clients} clients, idle for ${seconds} s`);
    let deadline = Date.now() + seconds * 1000;
    const idle = await load(() => Date.now() > deadline);

    log(`[sweep-bench] recall during a consolidation sweep (at most ${seconds} s)`);
    const sweepStarted = performance.now();
    let sweepMs: number | null = null;
    let sweepSubjects: number | null = null;
    const sweep = runConsolidationSweep({ connection }).then((result) => {
      sweepMs = Math.round(performance.now() - sweepStarted);
      sweepSubjects = result.tenants.reduce((sum, t) => sum + t.subjects, 0);
    });
    deadline = Date.now() + seconds * 1000;
    const duringSweep = await load(() => Date.now() > deadline || sweepMs !== null);
    if (sweepMs === null) log('[sweep-bench] waiting for the sweep to end');
    await sweep;
    return { events, subjects, clients, idle, duringSweep, sweepMs, sweepSubjects };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function percentiles(values: number[]): { p50Ms: number; p95Ms: number; p99Ms: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => (sorted.length === 0 ? 0 : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]));
  return { p50Ms: at(0.5), p95Ms: at(0.95), p99Ms: at(0.99) };
}

// `npx tsx apps/cli/src/bench/consolidation-load.ts [events] [subjects] [clients] [seconds]` prints the figures as JSON.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [events, subjects, clients, seconds] = process.argv.slice(2).map(Number);
  measureRecallDuringSweep({ events: events || undefined, subjects: subjects || undefined, clients: clients || undefined, seconds: seconds || undefined })
    .then((figures) => {
      process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
      process.exit(0);
    })
    .catch((error: unknown) => {
      process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
      process.exit(1);
    });
}
