import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { elmaArgs, runProcess } from '../../../tests/support/elma-process';

/** A port nothing listens on: taken from the kernel, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const elma = (args: string[], env: Record<string, string>) =>
  runProcess(process.execPath, elmaArgs(...args), { env: { ...process.env, ...env } });

/**
 * Every command that talks to the API or to Temporal, pointed at a port where nothing listens (real `elma`
 * processes): exit 1, the address it tried and how to change it, never a stack trace.
 */
describe('a command that cannot reach ELMA says where it looked', { timeout: 300_000 }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-unreachable-'));
  let port: number;
  let base: Record<string, string>;
  beforeAll(async () => {
    port = await closedPort();
    // Nothing may come from the developer's shell: no API, no Temporal, no model.
    base = {
      ELMA_DATA_DIR: dataDir,
      ELMA_EMBEDDER: 'hashing',
      ELMA_TOKEN: 'not-a-real-token',
      ELMA_URL: '',
      ELMA_PORT: '',
      TEMPORAL_ADDRESS: '',
      TEMPORAL_PORT: '',
    };
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const api = (run: { code: number | null; stderr: string }, command: string, url: string) => {
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(
      `elma ${command}: cannot reach the ELMA API at ${url} (ECONNREFUSED): is elma running? set ELMA_URL or ELMA_PORT`,
    );
    expect(run.stderr).not.toMatch(/^\s+at /m);
  };

  it.each([
    ['tenants', ['tenants', 'status', 'acme', 'off_1'], 'ELMA_URL'],
    ['audit', ['audit', 'export'], 'ELMA_URL'],
    ['erasure', ['erasure', 'status', 'era_1'], 'ELMA_PORT'],
    ['erasure', ['erasure', 'list'], '--url'],
  ])('elma %s (%s) names the API address, given by %s', async (command, args, how) => {
    const url = `http://127.0.0.1:${port}`;
    const env = how === 'ELMA_URL' ? { ...base, ELMA_URL: url } : how === 'ELMA_PORT' ? { ...base, ELMA_PORT: String(port) } : base;
    const run = await elma(how === '--url' ? [...args, '--url', url] : args, env);
    api(run, command, url);
  });

  it('elma rebuild names the Temporal address, from TEMPORAL_PORT', async () => {
    const run = await elma(['rebuild', '--tenant', 'acme'], { ...base, TEMPORAL_PORT: String(port) });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`elma rebuild: cannot reach Temporal at 127.0.0.1:${port} (`);
    expect(run.stderr).toContain('set TEMPORAL_ADDRESS or TEMPORAL_PORT');
    expect(run.stderr).not.toMatch(/^\s+at /m);
    expect(run.stdout).toBe('');
  });

  it('elma worker names the Temporal address, from TEMPORAL_ADDRESS', async () => {
    const run = await elma(['worker'], { ...base, TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`elma worker: cannot reach Temporal at 127.0.0.1:${port} (`);
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});
