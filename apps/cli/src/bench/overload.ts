import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createApi } from '@elma/api';
import type { Principal } from '@elma/domain';
import { loadConfig, mintToken, openElma, silentLogger } from '@elma/infra';
import { prng, query, sentence } from './corpus';

export interface OverloadFigures {
  clients: number;
  recalls: number;
  /** Recalls answered 200, and their latency. */
  answered: number;
  answeredP50Ms: number;
  answeredP99Ms: number;
  /** Recalls refused with 503 SERVER.OVERLOADED, and how long the refusal took at most. */
  shed: number;
  shedMaxMs: number;
  /** Any other outcome (another status, a client-side timeout), by status or `timeout`. */
  other: Record<string, number>;
  slowestMs: number;
  /**
   * The event loop's delay during the flood (99th percentile and worst): time a request can spend
   * unseen, before any handler or admission check runs. Admission control cannot shed what the loop has
   * not read yet, so a high figure here points at synchronous work elsewhere in the process.
   */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

export interface OverloadOptions {
  /** Concurrent clients; each writes an event and recalls it with read-your-writes, `rounds` times. */
  clients?: number;
  rounds?: number;
  /** Memories in the tenant before the flood. */
  preload?: number;
  /** A client gives up on a request after this long. */
  timeoutMs?: number;
  /** Each client writes an event before each recall (default); false: recalls only. */
  writes?: boolean;
  /** Extra configuration (e.g. `ELMA_MAX_INFLIGHT`), as environment variables. */
  env?: Record<string, string>;
}

/**
 * Many agents at once over real HTTP against one embedded ELMA: each writes
 * an event, then asks a strong (read-your-writes) recall, so recalls wait for
 * the projection behind everyone's writes. Shows what admission control
 * does: bounded latency for what is admitted, fast 503s for the rest.
 */
export async function measureOverload(options: OverloadOptions = {}): Promise<OverloadFigures> {
  const clients = options.clients ?? 256;
  const rounds = options.rounds ?? 5;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-overload-'));
  const config = loadConfig({ ELMA_DATA_DIR: dataDir, ELMA_PORT: '0', ...options.env });
  const elma = await openElma(config, { logger: silentLogger });
  try {
    await elma.runner.start();
    const random = prng(11);
    const principal = (sub: string): Principal => ({ tenant: 'bench_load', sub, roles: ['agent'], purposes: ['support'], clearance: 'internal' });
    let position = 0;
    for (let done = 0; done < (options.preload ?? 2_000); done += 100) {
      const events = Array.from({ length: 100 }, (_, i) => ({
        subject: `subject-${(done + i) % 100}`,
        occurredAt: new Date(Date.UTC(2026, 0, 1) + (done + i) * 60_000).toISOString(),
        activity: 'chat.turn',
        content: { text: sentence(random, random() < 0.5) },
        source: { system: 'bench', externalId: `pre-${done + i}`, channel: 'chat' },
        purposes: ['support'],
      }));
      position = Number((await elma.ingest.ingest(principal('bench'), { events })).position);
    }
    await elma.runner.waitFor(BigInt(position), 300_000);
    const app = await createApi(elma);
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
      const answered: number[] = [];
      const shed: number[] = [];
      const other: Record<string, number> = {};
      const post = async (token: string, path: string, body: unknown) => {
        const started = performance.now();
        try {
          const response = await fetch(`${url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(timeoutMs),
          });
          await response.arrayBuffer();
          return { status: String(response.status), ms: performance.now() - started };
        } catch {
          return { status: 'timeout', ms: performance.now() - started };
        }
      };
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      await Promise.all(
        Array.from({ length: clients }, async (_, c) => {
          const token = await mintToken(config.jwtSecret, principal(`agent-${c}`));
          const r = prng(1_000 + c);
          for (let round = 0; round < rounds; round++) {
            if (options.writes !== false) {
              await post(token, '/v1/events', {
                subject: `subject-${c % 100}`,
                occurredAt: new Date().toISOString(),
                activity: 'chat.turn',
                content: { text: sentence(r, r() < 0.5) },
                source: { system: 'bench', externalId: `load-${c}-${round}`, channel: 'chat' },
                purposes: ['support'],
              });
            }
            const recall = await post(token, '/v1/recall', { query: query(r), purpose: 'support', consistency: 'strong', budgetTokens: 300 });
            if (recall.status === '200') answered.push(recall.ms);
            else if (recall.status === '503') shed.push(recall.ms);
            else other[recall.status] = (other[recall.status] ?? 0) + 1;
          }
        }),
      );
      delay.disable();
      const sorted = [...answered].sort((a, b) => a - b);
      const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
      return {
        clients,
        recalls: clients * rounds,
        answered: answered.length,
        answeredP50Ms: at(0.5),
        answeredP99Ms: at(0.99),
        shed: shed.length,
        shedMaxMs: Math.round(Math.max(0, ...shed)),
        other,
        slowestMs: Math.round(Math.max(0, ...answered, ...shed)),
        loopDelayP99Ms: Math.round(delay.percentile(99) / 1e6),
        loopDelayMaxMs: Math.round(delay.max / 1e6),
      };
    } finally {
      await app.close();
    }
  } finally {
    await elma.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// `npx tsx apps/cli/src/bench/overload.ts [clients] [rounds] [preload] [--recalls-only] [KEY=VALUE ...]` prints the figures as JSON.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const numbers = args.filter((a) => /^\d+$/.test(a)).map(Number);
  const env = Object.fromEntries(args.filter((a) => a.includes('=')).map((a) => a.split('=', 2) as [string, string]));
  measureOverload({ clients: numbers[0], rounds: numbers[1], preload: numbers[2], writes: !args.includes('--recalls-only'), env })
    .then((figures) => {
      process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
      process.exit(0);
    })
    .catch((error: unknown) => {
      process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
      process.exit(1);
    });
}
