import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { freePort, loadConfig, startTemporalDevServer, type TemporalDevServer } from '@elma/infra';
import { openElma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { ELMA_SEARCH_ATTRIBUTES } from '@elma/workflows';
import {
  devServersOn,
  isRunning,
  mintToken,
  ownElmaEnv,
  recordedTemporalPid,
  startElma,
  waitFor,
  type ElmaProcess,
} from '../../../tests/support/elma-process';

/**
 * Temporal as a child of `elma start`, not an orphan: the dev server dies with
 * ELMA, a leftover one is stopped by the next start, a dead one is restarted,
 * and while Temporal is away ingest and recall go on and erasures are refused
 * quickly with nothing stored. Real processes, real dev servers, real HTTP.
 */
describe('Temporal under elma start', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  });

  async function folder() {
    const dataDir = mkdtempSync(join(tmpdir(), 'elma-temporal-child-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const { env, temporalPort } = await ownElmaEnv(dataDir);
    return { dataDir, env, temporalPort };
  }

  async function start(env: NodeJS.ProcessEnv): Promise<ElmaProcess> {
    const elma = await startElma(env);
    cleanups.push(() => elma.stop());
    return elma;
  }

  const health = async (api: string) =>
    (await (await fetch(`${api}/health`, { signal: AbortSignal.timeout(10_000) })).json()) as {
      status: string;
      engines: Record<string, { up: boolean }>;
    };

  const client = (api: string, token: string) => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    return {
      ingest: (externalId: string, text: string) =>
        fetch(`${api}/v1/events`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            subject: 'cust-7',
            occurredAt: '2026-11-25T09:30:00Z',
            activity: 'chat.turn',
            content: { text },
            source: { system: 'crm', externalId },
          }),
        }),
      recall: (query: string) =>
        fetch(`${api}/v1/recall`, { method: 'POST', headers, body: JSON.stringify({ query, purpose: 'support', consistency: 'strong' }) }),
      erase: () =>
        fetch(`${api}/v1/erasures`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ scope: { type: 'subject', subject: 'cust-7' }, reason: 'subject_request' }),
        }),
      async erasureStatus(requestId: string) {
        return ((await (await fetch(`${api}/v1/erasures/${requestId}`, { headers })).json()) as { status: string }).status;
      },
    };
  };

  it('kill -9 of elma start takes its dev server down with it, and the next start serves at once', async () => {
    const { dataDir, env } = await folder();
    const first = await start(env);
    const temporalDb = join(dataDir, 'temporal.db');
    expect(devServersOn(temporalDb)).toHaveLength(1);

    first.child.kill('SIGKILL');
    const goneAfterMs = await waitFor(() => devServersOn(temporalDb).length === 0, 10_000, 'the dev server to die with its parent');

    const second = await start(env);
    const up = await health(second.api);
    expect(up.status).toBe('up');
    expect(up.engines.temporal.up).toBe(true);
    console.info(`[faults] dev server gone ${goneAfterMs} ms after kill -9 of elma start; the next start served /health`);
  });

  it('a dev server left running by an earlier process is stopped by the next start, found by its pid file', async () => {
    const { dataDir, env, temporalPort } = await folder();
    // What a start on a system without setpriv leaves behind after kill -9: a server on ELMA's port and database.
    const orphan = await startTemporalDevServer({
      dbFile: join(dataDir, 'temporal.db'),
      port: temporalPort,
      headless: true,
      searchAttributes: ELMA_SEARCH_ATTRIBUTES,
      pidFile: join(dataDir, 'temporal.pid'),
    });
    cleanups.push(() => orphan.stop());
    const orphanPid = orphan.pid!;

    const elma = await start(env);
    expect(isRunning(orphanPid)).toBe(false);
    expect(recordedTemporalPid(dataDir)).not.toBe(orphanPid);
    expect((await health(elma.api)).engines.temporal.up).toBe(true);
  });

  it('a dev server that dies under elma start is restarted; meanwhile health names it down and ingest goes on', async () => {
    const { dataDir, env } = await folder();
    const elma = await start(env);
    const api = client(elma.api, mintToken(env, '--tenant', 'acme', '--sub', 'dpo-1', '--roles', 'dpo,agent', '--clearance', 'restricted'));
    expect((await api.ingest('e-1', 'The Nightingale delivery slipped by two weeks.')).status).toBe(202);

    process.kill(recordedTemporalPid(dataDir), 'SIGKILL');
    const down = await health(elma.api);
    expect(down.status).toBe('down');
    expect(down.engines.temporal.up).toBe(false);
    expect(down.engines.eventLog.up).toBe(true);
    expect((await api.ingest('e-2', 'The Nightingale budget was approved.')).status).toBe(202);

    const backAfterMs = await waitFor(async () => (await health(elma.api)).engines.temporal.up, 60_000, 'the dev server to be restarted');
    const created = await api.erase();
    expect(created.status).toBe(202);
    const { requestId } = (await created.json()) as { requestId: string };
    await waitFor(
      async () => (await api.erasureStatus(requestId)) === 'completed',
      60_000,
      'the erasure to complete on the restarted server',
    );
    expect(elma.output().match(/temporal dev server exited; restarting it/g)).toHaveLength(1);
    console.info(`[faults] dev server killed under elma start: health up again after ${backAfterMs} ms, erasure completed`);
  });

  it('an erasure stored by a process that died before starting its workflow is started by the next elma start', async () => {
    const { dataDir, env } = await folder();
    // What a process leaves when it dies between storing a request and starting its workflow.
    const dpo: Principal = { tenant: 'acme', sub: 'dpo-1', roles: ['dpo', 'agent'], purposes: ['support'], clearance: 'restricted' };
    const crashed = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
    const { requestId } = await crashed.erasure.requests.request(
      dpo,
      { scope: { type: 'subject', subject: 'cust-7' }, reason: 'subject_request' },
      'req-1',
    );
    await crashed.close();

    const elma = await start(env);
    const api = client(elma.api, mintToken(env, '--tenant', 'acme', '--sub', 'dpo-1', '--roles', 'dpo,agent', '--clearance', 'restricted'));
    await waitFor(
      async () => (await api.erasureStatus(requestId)) === 'completed',
      60_000,
      'the queued erasure to be started and completed',
    );
  });

  it('with Temporal down, erasures are refused with 503 within seconds and nothing is stored; ingest and recall go on', async () => {
    const { dataDir, env } = await folder();
    const temporalDb = join(dataDir, 'external-temporal.db');
    const temporalPort = await freePort();
    let temporal: TemporalDevServer = await startTemporalDevServer({
      dbFile: temporalDb,
      port: temporalPort,
      headless: true,
      searchAttributes: ELMA_SEARCH_ATTRIBUTES,
    });
    cleanups.push(() => temporal.stop());
    const elma = await start({ ...env, TEMPORAL_ADDRESS: temporal.address });
    const api = client(elma.api, mintToken(env, '--tenant', 'acme', '--sub', 'dpo-1', '--roles', 'dpo,agent', '--clearance', 'restricted'));
    expect((await api.ingest('e-1', 'The Nightingale delivery slipped by two weeks.')).status).toBe(202);

    await temporal.stop();
    let startedAt = Date.now();
    const down = await health(elma.api);
    const healthMs = Date.now() - startedAt;
    expect(down.engines.temporal.up).toBe(false);
    expect(down.engines.index.up).toBe(true);

    startedAt = Date.now();
    const refused = await api.erase();
    const refusedMs = Date.now() - startedAt;
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { code: string }).code).toBe('TEMPORAL.UNAVAILABLE');
    expect(refusedMs).toBeLessThan(3_000);
    expect(healthMs).toBeLessThan(3_000);

    expect((await api.ingest('e-2', 'The Nightingale budget was approved.')).status).toBe(202);
    const recall = await api.recall('Nightingale budget');
    expect(recall.status).toBe(200);
    expect(((await recall.json()) as { items: { text: string }[] }).items.map((i) => i.text)).toContain(
      'The Nightingale budget was approved.',
    );

    // Read from this process, never from ELMA's: it holds the file.
    const log = new Database(join(dataDir, 'events.db'), { readonly: true, fileMustExist: true });
    const stored = log.prepare(`SELECT count(*) AS n FROM events WHERE stream LIKE 'erasure-%' OR stream LIKE 'outbox-%'`).get() as {
      n: number;
    };
    log.close();
    expect(stored.n).toBe(0);

    temporal = await startTemporalDevServer({
      dbFile: temporalDb,
      port: temporalPort,
      headless: true,
      searchAttributes: ELMA_SEARCH_ATTRIBUTES,
    });
    await waitFor(async () => (await health(elma.api)).engines.temporal.up, 30_000, 'Temporal to be back');
    const accepted = await api.erase();
    expect(accepted.status).toBe(202);
    const { requestId } = (await accepted.json()) as { requestId: string };
    await waitFor(
      async () => (await api.erasureStatus(requestId)) === 'completed',
      90_000,
      'the erasure to complete once Temporal is back',
    );
    console.info(`[faults] Temporal down: /health answered in ${healthMs} ms, POST /v1/erasures 503 in ${refusedMs} ms`);
  });
});
