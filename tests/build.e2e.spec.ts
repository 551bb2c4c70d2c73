import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Connection } from '@temporalio/client';
import type { Principal } from '@elma/domain';
import { findTemporalCli, loadConfig, verifySignedCertificate } from '@elma/infra';
import { approveErasure, erasureProgress, erasureResult, startErasure } from '@elma/worker';
import { embeddedStartEnv, sourceElmaArgs, spawnElmaStart, type StartedElma } from '../apps/cli/src/embedded-env';
import { requestSubjectErasure, sleep, stopProcessGroups, withElmaAt } from './support/elma-process';
import { buildState } from '../apps/cli/bin/bundle-state.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));

/**
 * `npm run build` as production runs it: the build written into a folder outside the repository, laid out
 * as the Docker image's runtime stage is (package.json, node_modules, dist/), and run with plain node, no
 * tsx: the CLI, `elma start` serving HTTP (its index in the built index thread), and an `elma worker` that takes an erasure to its certificate on
 * the test run's Temporal server with the prebuilt workflow bundle (its verify step runs the byte-scan child
 * script that the build copies beside elma.mjs).
 */
describe('the build (node dist/elma.mjs)', () => {
  const root = mkdtempSync(join(tmpdir(), 'elma-build-'));
  const dist = join(root, 'dist');
  const cli = join(dist, 'elma.mjs');
  const built = (...args: string[]) => ['--enable-source-maps', cli, ...args];
  const children: ChildProcess[] = [];
  const dataDirs: string[] = [];
  const dataDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-build-data-'));
    dataDirs.push(dir);
    return dir;
  };

  beforeAll(() => {
    symlinkSync(join(repo, 'node_modules'), join(root, 'node_modules'));
    copyFileSync(join(repo, 'package.json'), join(root, 'package.json'));
    const build = spawnSync(process.execPath, [join(repo, 'scripts', 'build.mjs'), '--outdir', dist], {
      cwd: repo,
      encoding: 'utf8',
      timeout: 110_000,
    });
    if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
  }, 120_000);

  afterAll(async () => {
    await stopProcessGroups(children);
    for (const dir of [...dataDirs, root]) rmSync(dir, { recursive: true, force: true });
  });

  it('writes the CLI (split into chunks), the index thread, their source maps, the workflow bundle, the files the code opens beside itself and the list of its inputs', () => {
    const chunk = /^[a-z-]+-[A-Z0-9]{8}\.mjs(\.map)?$/;
    expect(
      readdirSync(dist)
        .filter((file) => !chunk.test(file))
        .sort(),
    ).toEqual([
      'byte-scan-process.mjs',
      'console.css',
      'console.html',
      'console.js',
      'elma.mjs',
      'elma.mjs.map',
      'index-thread.mjs',
      'index-thread.mjs.map',
      'inputs.json',
      'workflow-bundle-traced.js',
      'workflow-bundle.js',
    ]);
    // A chunk per command at least: the CLI loads each when it runs.
    expect(readdirSync(dist).filter((file) => /^token-[A-Z0-9]{8}\.mjs$/.test(file))).toHaveLength(1);
    // The build is current for the sources it was made from, as the `elma` bin checks.
    expect(buildState(dist, repo)).toEqual({ current: true });
  });

  it('loads a command with the packages it imports only: `elma token` from the build loads no NestJS, Temporal, Elasticsearch or index', () => {
    const folder = dataDir();
    loadConfig({ ELMA_DATA_DIR: folder });
    const record = join(root, 'loads.txt');
    writeFileSync(record, '');
    const recorder = fileURLToPath(new URL('../apps/cli/src/testing/record-loads.mjs', import.meta.url));
    const minted = spawnSync(process.execPath, ['--import', recorder, cli, 'token'], {
      env: { ...process.env, ELMA_DATA_DIR: folder, ELMA_RECORD_LOADS: record },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(minted.status, minted.stderr).toBe(0);
    const loaded = readFileSync(record, 'utf8').split('\n');
    expect(
      loaded.filter((module) => /node_modules\/(@nestjs|@temporalio|@elastic|@eventstore|usearch|pdfjs-dist|pdfkit)\//.test(module)),
    ).toEqual([]);
    expect(loaded.some((module) => /\/dist\/token-[A-Z0-9]{8}\.mjs$/.test(module))).toBe(true);
  });

  it('prints the same usage as the sources, and `api` refuses the embedded index as it does from the sources', () => {
    const env = { ...process.env, ELMA_DATA_DIR: dataDir(), ELMA_PORT: '1', TEMPORAL_ADDRESS: '' };
    const fromBuild = spawnSync(process.execPath, built('--help'), { env, encoding: 'utf8', timeout: 30_000 });
    const fromSources = spawnSync(process.execPath, sourceElmaArgs('--help'), { env, encoding: 'utf8', timeout: 30_000 });
    expect(fromBuild.status).toBe(0);
    expect(fromBuild.stdout).toContain('elma <command> [options]');
    expect(fromBuild.stdout).toBe(fromSources.stdout);

    const api = spawnSync(process.execPath, built('api'), {
      env: { ...env, TEMPORAL_ADDRESS: '127.0.0.1:1' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(api.status).toBe(2);
    expect(api.stderr).toContain('ELMA_INDEX=elasticsearch');
  });

  describe('elma start', () => {
    let elma: StartedElma;
    let api = '';

    beforeAll(async () => {
      const { env, port } = await embeddedStartEnv(dataDir());
      // The build's own folder holds no .tools/: the Temporal CLI the test run found.
      elma = await spawnElmaStart({ ...env, TEMPORAL_CLI: findTemporalCli() }, { elmaArgs: built, readyTimeoutMs: 100_000 });
      api = `http://127.0.0.1:${port}`;
    }, 120_000);

    afterAll(async () => {
      await elma?.stop();
    });

    it('serves HTTP with every engine up, Temporal included', async () => {
      const response = await fetch(`${api}/health`);
      expect(response.status).toBe(200);
      const health = (await response.json()) as { status: string; engines: Record<string, { up: boolean }> };
      expect(health.status).toBe('up');
      expect(health.engines.temporal.up).toBe(true);
      // Nest's Swagger UI and GraphiQL assets come from node_modules, resolved from the build.
      expect((await fetch(`${api}/docs/openapi.json`)).status).toBe(200);
      expect((await fetch(`${api}/graphiql`)).status).toBe(200);
      // The console's page and the script the build compiled (no esbuild at run time).
      expect((await fetch(`${api}/console/`)).status).toBe(200);
      const script = await fetch(`${api}/console/console.js`);
      expect(script.status).toBe(200);
      expect(await script.text()).toContain('/v1/certificates/verify');
    });
  });

  describe('elma worker', () => {
    const principal: Principal = { tenant: 'acme', sub: 'dpo-1', roles: ['dpo', 'agent'], purposes: ['support'], clearance: 'restricted' };
    const address = inject('temporalAddress');
    const taskQueue = `elma-build-${randomUUID()}`;
    const folder = dataDir();
    let connection: Connection;

    afterAll(async () => {
      await connection?.close();
    });

    it('runs the prebuilt workflows and takes an erasure to a certificate that verifies', async () => {
      const requestId = await withElmaAt(folder, async (elma) => {
        await elma.runner.start();
        return requestSubjectErasure(elma, principal, 'cust-build', ['a note about the Ravensworth contract', 'Ravensworth prefers email']);
      });

      const env = {
        ...process.env,
        ELMA_DATA_DIR: folder,
        TEMPORAL_ADDRESS: address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        ELMA_LOG_LEVEL: 'warn',
      };
      const worker = spawn(process.execPath, built('worker'), { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
      children.push(worker);
      let output = '';
      worker.stderr!.on('data', (chunk) => (output += chunk));
      for (const deadline = Date.now() + 60_000; !output.includes('worker polling'); await sleep(100)) {
        if (worker.exitCode !== null || Date.now() > deadline) throw new Error(`worker did not start:\n${output}`);
      }
      expect(output).toContain(`workflows from the build: ${join(dist, 'workflow-bundle.js')}`);

      connection = await Connection.connect({ address });
      const client = { connection, taskQueue };
      await startErasure(client, { tenant: 'acme', requestId, reason: 'subject_request' });
      for (let i = 0; (await erasureProgress(client, 'acme', requestId))?.status !== 'awaiting_approval'; i++) {
        if (i > 600) throw new Error(`never reached the approval step:\n${output}`);
        await sleep(100);
      }
      await approveErasure(client, 'acme', requestId, 'dpo-1');
      const result = await erasureResult(client, 'acme', requestId);
      expect(result.erased).toBe(2);
      expect((await erasureProgress(client, 'acme', requestId))!.status).toBe('completed');

      await stopProcessGroups([worker]);
      await withElmaAt(folder, async (elma) => {
        const stored = (await elma.erasure.store.certificate('acme', requestId))!;
        expect(verifySignedCertificate(stored, elma.signer.jwks())).toMatchObject({ ok: true });
        expect(stored.signature.value).toBe(result.signature);
      });
    });
  });
});
