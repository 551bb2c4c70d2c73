#!/usr/bin/env node
// Starts the TEST-ONLY Elasticsearch node built by ensure-elasticsearch.mjs (building it if needed) and waits for
// green/yellow health. Prints, on stdout, shell lines: export ELMA_ELASTICSEARCH_URL=..., ELMA_ES_PID, ELMA_ES_DATA,
// ELMA_ES_LOG (so `eval "$(node scripts/start-elasticsearch.mjs)"` works). Progress goes to stderr.
//
//   node scripts/start-elasticsearch.mjs [--version 9.5.3|8.15.3] [--port N] [--transport-port N] [--data DIR] [--heap 512m] [--slow-leases]
//   node scripts/start-elasticsearch.mjs --stop PID       # SIGTERM, then SIGKILL after 20 s
//
// Without --port it takes a free port from the OS (ELMA_ES_PORT also sets it), likewise the transport port
// (--transport-port, ELMA_ES_TRANSPORT_PORT); without --data a fresh folder
// under the temp dir; without --version ELMA_ES_VERSION, else 9.5.3 (the versions: RECIPES in
// ensure-elasticsearch.mjs). The node binds 127.0.0.1 only, security is off (there is no x-pack at all), single-node discovery.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_ES_VERSION, ensureElasticsearch, recipeOf, requestedVersion } from './ensure-elasticsearch.mjs';

const log = (msg) => process.stderr.write(`[elma] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function arg(name) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function stopElasticsearch(pid, graceMs = 20_000) {
  if (!alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (alive(pid) && Date.now() < deadline) await sleep(200);
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

/**
 * Test-node timing only: an index template (all patterns, lowest priority) that renews retention leases every
 * second instead of every 30 s (`index.soft_deletes.retention_lease.sync_interval`, a test setting the stand-in
 * plugin registers). Without it every purge waits about 30 s before its expunge (see `expungeDeletes`).
 */
async function putFastLeaseTemplate(url) {
  const res = await fetch(`${url}/_index_template/elma-test-fast-leases`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      index_patterns: ['*'],
      priority: 0,
      template: { settings: { 'index.soft_deletes.retention_lease.sync_interval': '1s' } },
    }),
  });
  if (!res.ok) throw new Error(`could not put the fast-lease index template: ${res.status} ${await res.text()}`);
}

export async function startElasticsearch({
  version = DEFAULT_ES_VERSION,
  port,
  transportPort: transport,
  data,
  heap = '512m',
  timeoutMs = 120_000,
  fastLeases = true,
} = {}) {
  const home = ensureElasticsearch(version);
  const java = join(readFileSync(join(home, 'java-home'), 'utf8').trim(), 'bin', 'java');
  const httpPort = port ?? (process.env.ELMA_ES_PORT ? Number(process.env.ELMA_ES_PORT) : await freePort());
  const transportPort = transport ?? (process.env.ELMA_ES_TRANSPORT_PORT ? Number(process.env.ELMA_ES_TRANSPORT_PORT) : await freePort());
  const dataDir = data ?? mkdtempSync(join(tmpdir(), 'elma-es-'));
  mkdirSync(join(dataDir, 'logs'), { recursive: true });
  const logFile = join(dataDir, 'node.log');
  const out = openSync(logFile, 'a');
  const args = [
    `-Xms${heap}`,
    `-Xmx${heap}`,
    '-XX:+UseSerialGC',
    '-Djava.io.tmpdir=' + join(dataDir, 'tmp'),
    ...recipeOf(version).jvmArgs,
    '-p',
    join(home, 'lib'),
    '-cp',
    join(home, 'launcher'),
    'org.elma.eslauncher.Launcher',
    home,
    '-Ediscovery.type=single-node',
    '-Enetwork.host=127.0.0.1',
    `-Ehttp.port=${httpPort}`,
    `-Etransport.port=${transportPort}`,
    `-Epath.data=${join(dataDir, 'data')}`,
    `-Epath.logs=${join(dataDir, 'logs')}`,
    '-Enode.name=elma-test',
    '-Ecluster.name=elma-test',
    // The contract suite deletes its namespaces by wildcard (the official image defaults to true as well).
    '-Eaction.destructive_requires_name=false',
    // A small test disk must not trip the flood-stage watermark.
    '-Ecluster.routing.allocation.disk.threshold_enabled=false',
  ];
  mkdirSync(join(dataDir, 'tmp'), { recursive: true });
  const child = spawn(java, args, { detached: true, stdio: ['ignore', out, out] });
  child.unref();
  const pid = child.pid;
  writeFileSync(join(dataDir, 'elasticsearch.pid'), `${pid}\n`);
  const url = `http://127.0.0.1:${httpPort}`;
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (!alive(pid))
      throw new Error(
        `Elasticsearch exited during start; see ${logFile}:\n${readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n')}`,
      );
    try {
      const res = await fetch(`${url}/_cluster/health?wait_for_status=yellow&timeout=1s`);
      if (res.ok) {
        const body = await res.json();
        if (body.status === 'green' || body.status === 'yellow') {
          if (fastLeases) await putFastLeaseTemplate(url);
          log(
            `Elasticsearch ${version} at ${url} (pid ${pid}, ${body.status}) in ${((Date.now() - started) / 1000).toFixed(1)} s; data ${dataDir}`,
          );
          return { url, pid, dataDir, logFile };
        }
      }
    } catch {
      // not listening yet
    }
    await sleep(300);
  }
  await stopElasticsearch(pid);
  throw new Error(`Elasticsearch did not become healthy within ${timeoutMs / 1000} s; see ${logFile}`);
}

const isMain = process.argv[1] && new URL(import.meta.url).pathname === process.argv[1];
if (isMain) {
  try {
    const stop = arg('--stop');
    if (stop) {
      await stopElasticsearch(Number(stop));
      log(`stopped ${stop}`);
    } else {
      const node = await startElasticsearch({
        version: requestedVersion(),
        port: arg('--port') ? Number(arg('--port')) : undefined,
        transportPort: arg('--transport-port') ? Number(arg('--transport-port')) : undefined,
        data: arg('--data'),
        heap: arg('--heap') ?? '512m',
        fastLeases: !process.argv.includes('--slow-leases'),
      });
      process.stdout.write(
        `export ELMA_ELASTICSEARCH_URL=${node.url}\nexport ELMA_ES_PID=${node.pid}\nexport ELMA_ES_DATA=${node.dataDir}\nexport ELMA_ES_LOG=${node.logFile}\n`,
      );
    }
  } catch (err) {
    log(`error: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
