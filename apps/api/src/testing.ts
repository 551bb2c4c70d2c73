import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Clock, Principal } from '@elma/domain';
import { loadConfig, mintToken, openElma, silentLogger, type Elma } from '@elma/infra';
import { createApi } from './app';

/** A real ELMA on real SQLite files in a temporary folder, served over real HTTP on a free port. */
export interface TestApp {
  url: string;
  elma: Elma;
  app: NestFastifyApplication;
  dataDir: string;
  token(claims?: Partial<Principal>): Promise<string>;
  close(): Promise<void>;
}

export async function startTestApp(options: { dataDir?: string; keep?: boolean; clock?: Clock } = {}): Promise<TestApp> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'elma-test-'));
  const config = loadConfig({ ELMA_DATA_DIR: dataDir, ELMA_PORT: '0' });
  const elma = await openElma(config, { logger: silentLogger, clock: options.clock });
  await elma.runner.start();
  const app = await createApi(elma);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.getHttpServer().address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    elma,
    app,
    dataDir,
    token: (claims = {}) =>
      mintToken(config.jwtSecret, {
        tenant: 'acme',
        sub: 'agent-1',
        roles: ['agent'],
        purposes: ['support'],
        clearance: 'internal',
        ...claims,
      }),
    async close() {
      await app.close();
      await elma.close();
      if (!options.keep) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A chat event as a client would send it; `extra` overrides any field. */
export const chatEvent = (subject: string, text: string, extra: Record<string, unknown> = {}) => ({
  subject,
  occurredAt: '2026-11-20T10:00:00Z',
  activity: 'chat.turn',
  content: { text },
  source: { system: 'crm', channel: 'chat' },
  purposes: ['support'],
  ...extra,
});

/** Events in a tenant's data streams (audit entries are written on every call, by design, so the log head moves). */
export async function dataEventCount(elma: Elma, tenant: string): Promise<number> {
  let n = 0;
  for await (const _ of elma.log.readAll({ filter: { streamNamePrefix: [`events-${tenant}-`, `memory-${tenant}-`] } })) n++;
  return n;
}
