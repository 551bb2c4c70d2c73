/**
 * `npm run test:elasticsearch`: the production-index suites in one command. For each pinned Elasticsearch
 * version it builds (or reuses) the test-only node in `.tools/elasticsearch/`, starts it on a free port with a
 * data folder under the temp dir, runs the Elasticsearch contract suites against it (`npm run test:engines --
 * --engine Elasticsearch`; the embedded engines' suites run in `npm test`) and the
 * API end-to-end suites on the production index (`npm run test:e2e:elasticsearch`), then stops it: every API
 * suite on the current version (DEFAULT_ES_VERSION), the smoke set below on older ones (`--full`: every suite on
 * every version). Prints how long each part took and exits non-zero when any part failed.
 *
 *   npm run test:elasticsearch                        # every pinned version
 *   npm run test:elasticsearch -- --version 9.5.3     # one of them
 *   npm run test:elasticsearch -- --no-e2e            # the contract suites only
 *   npm run test:elasticsearch -- --full              # every API suite on every version
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DEFAULT_ES_VERSION, RECIPES, ensureElasticsearch } from './ensure-elasticsearch.mjs';
import { startElasticsearch, stopElasticsearch } from './start-elasticsearch.mjs';

interface Part {
  name: string;
  seconds: number;
  status: number;
}

const { values } = parseArgs({
  options: {
    version: { type: 'string', multiple: true },
    'no-e2e': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    full: { type: 'boolean', default: false },
  },
});

/**
 * The API suites an older version runs besides the full contract suites: those whose assertions differ by
 * index (they branch on `e2eIndex`: the segment inspector after a purge, rebuilds into a new index, key
 * shredding, pseudonyms in stored documents, off-boarding's index deletion) and the listing, whose policy
 * filter is compiled into the index query. Every other API suite reaches the index only through calls the
 * contract suites already check on that version, and runs in full on the current one.
 */
const SMOKE_SUITES = [
  'apps/api/src/api.e2e.spec.ts',
  'apps/api/src/erasure.e2e.spec.ts',
  'apps/api/src/kms.e2e.spec.ts',
  'apps/api/src/offboarding.e2e.spec.ts',
  'apps/api/src/rebuild.e2e.spec.ts',
  'apps/api/src/listing.e2e.spec.ts',
  'apps/api/src/graphql/public-api.e2e.spec.ts',
  'apps/api/src/redteam/pseudonyms.e2e.spec.ts',
];
const versions: string[] = values.version ?? Object.keys(RECIPES);
const parts: Part[] = [];
let running: { pid: number; dataDir: string } | undefined;
let child: ChildProcess | undefined;

const log = (message: string) => console.log(`[test:elasticsearch] ${message}`);

/** Runs `npm run <script>` with `env` added, its output passed through; resolves with its exit status. */
function npmRun(script: string, env: Record<string, string>, args: string[] = []): Promise<number> {
  return new Promise((resolve) => {
    const started = spawn('npm', ['run', '--silent', script, ...(args.length ? ['--', ...args] : [])], {
      stdio: 'inherit',
      env: { ...process.env, ...env },
      // A process group of its own, so that an interrupt reaches every process under it (npm, tsx, vitest, its workers).
      detached: true,
    });
    child = started;
    started.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    started.on('error', () => resolve(1));
  });
}

async function timed(name: string, fn: () => Promise<number>): Promise<number> {
  const started = Date.now();
  let status = 1;
  try {
    status = await fn();
  } catch (error) {
    log(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
  parts.push({ name, seconds: (Date.now() - started) / 1000, status });
  return status;
}

async function stopNode(): Promise<void> {
  if (!running) return;
  const { pid, dataDir } = running;
  running = undefined;
  await stopElasticsearch(pid);
  if (!values.keep) rmSync(dataDir, { recursive: true, force: true });
}

// An interrupted run passes the signal on to the suite that runs and still stops its node.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (child?.pid && child.exitCode === null) {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    }
    void stopNode().finally(() => process.exit(130));
  });
}

for (const version of versions) {
  if ((await timed(`build ${version}`, async () => (ensureElasticsearch(version), 0))) !== 0) continue;
  let node: Awaited<ReturnType<typeof startElasticsearch>> | undefined;
  await timed(`start ${version}`, async () => {
    node = await startElasticsearch({ version });
    running = { pid: node.pid, dataDir: node.dataDir };
    log(`Elasticsearch ${version} at ${node.url}, data ${node.dataDir}`);
    return 0;
  });
  if (!node) continue;
  try {
    const env = { ELMA_ELASTICSEARCH_URL: node.url, ELMA_ELASTICSEARCH_DATA: `${node.dataDir}/data` };
    await timed(`contract suites ${version}`, () => npmRun('test:engines', env, ['--engine', 'Elasticsearch']));
    if (!values['no-e2e']) {
      const smoke = version !== DEFAULT_ES_VERSION && !values.full;
      await timed(`API e2e ${version}${smoke ? ' (smoke)' : ''}`, () =>
        npmRun(
          'test:e2e:elasticsearch',
          { ELMA_E2E_ELASTICSEARCH_URL: node!.url, ELMA_E2E_ELASTICSEARCH_DATA: `${node!.dataDir}/data` },
          smoke ? SMOKE_SUITES : [],
        ),
      );
    }
  } finally {
    await stopNode();
  }
}

console.log('\n[test:elasticsearch] parts:');
for (const part of parts)
  console.log(`  ${part.name.padEnd(26)} ${part.seconds.toFixed(1).padStart(7)} s  ${part.status === 0 ? 'ok' : 'FAILED'}`);
process.exit(parts.length > 0 && parts.every((p) => p.status === 0) ? 0 : 1);
