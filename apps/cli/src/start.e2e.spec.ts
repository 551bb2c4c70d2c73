import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@elma/infra';

const main = join(import.meta.dirname, 'main.ts');
const elmaArgs = (...args: string[]) => ['--import', 'tsx', main, ...args];

/**
 * `npm start` as a newcomer runs it: a real process with its own Temporal dev
 * server, its data in a folder of its own, driven over HTTP and the CLI, and
 * stopped with Ctrl-C (SIGINT).
 */
describe('elma start (the embedded all-in-one)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-start-'));
  let env: NodeJS.ProcessEnv;
  let child: ChildProcess;
  let output = '';
  let api = '';

  beforeAll(async () => {
    const [port, temporalPort, uiPort] = [await freePort(), await freePort(), await freePort()];
    env = {
      ...process.env,
      TEMPORAL_ADDRESS: '',
      ELMA_DATA_DIR: dataDir,
      ELMA_PORT: String(port),
      TEMPORAL_PORT: String(temporalPort),
      TEMPORAL_UI_PORT: String(uiPort),
      ELMA_LOG_LEVEL: 'warn',
    };
    delete env.TEMPORAL_ADDRESS;
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
  });

  it('reports every engine up, Temporal included', async () => {
    const health = (await (await fetch(`${api}/health`)).json()) as { status: string; engines: Record<string, { up: boolean }> };
    expect(health.status).toBe('up');
    expect(health.engines.temporal.up).toBe(true);
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
      await fetch(`${api}/v1/recall`, { method: 'POST', headers, body: JSON.stringify({ query: '交付风险', purpose: 'support', consistency: 'strong' }) })
    ).json()) as { items: { text: string }[] };
    expect(recall.items.map((i) => i.text)).toContain('王先生说交付风险很高。');

    const rebuild = spawnSync(process.execPath, elmaArgs('rebuild', '--tenant', 'acme'), { env, encoding: 'utf8' });
    expect(rebuild.status, rebuild.stderr).toBe(0);
    expect(JSON.parse(rebuild.stdout)).toEqual({ tenant: 'acme', dropped: 1, replayedEvents: 2, memories: 1 });
  });

  it('stops everything cleanly on Ctrl-C', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output).toContain('[elma] stopped');
  });
});
