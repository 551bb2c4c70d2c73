/**
 * `npm run test:engines`: the engine contract suites, against the embedded
 * adapters always and against the production adapters whose URL variables
 * are set (ELMA_EVENTSTORE_URL, ELMA_ELASTICSEARCH_URL). Prints which engines
 * ran and how each fared, and fails when any ran test failed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

interface Suite {
  engine: string;
  port: string;
  file: string;
  /** The variable that points the suite at a server; absent for embedded engines, which always run. */
  variable?: string;
}

const suites: Suite[] = [
  { engine: 'SQLite (embedded)', port: 'EventLog', file: 'infra/src/event-log/sqlite/sqlite-event-log.int.spec.ts' },
  { engine: 'EventStoreDB', port: 'EventLog', file: 'infra/src/event-log/eventstoredb/eventstoredb-event-log.int.spec.ts', variable: 'ELMA_EVENTSTORE_URL' },
  { engine: 'SQLite (embedded)', port: 'MemoryIndex', file: 'infra/src/memory-index/sqlite/sqlite-memory-index.int.spec.ts' },
  {
    engine: 'Elasticsearch',
    port: 'MemoryIndex',
    file: 'infra/src/memory-index/elasticsearch/elasticsearch-memory-index.int.spec.ts',
    variable: 'ELMA_ELASTICSEARCH_URL',
  },
  {
    engine: 'Elasticsearch',
    port: 'Views rebuild',
    file: 'infra/src/projection/tenant-views.int.spec.ts',
    variable: 'ELMA_ELASTICSEARCH_URL',
  },
  { engine: 'SQLite (embedded)', port: 'KeyVault', file: 'infra/src/key-vault/sqlite/sqlite-key-vault.int.spec.ts' },
];

interface JsonReport {
  testResults: { name: string; assertionResults: { status: string }[] }[];
}

const redact = (url: string) => url.replace(/\/\/[^@/]*@/, '//***@');

console.log('Engine contract suites:');
for (const suite of suites) {
  const url = suite.variable ? process.env[suite.variable] : undefined;
  const target = !suite.variable ? 'always' : url ? `${suite.variable}=${redact(url)}` : `skipped: ${suite.variable} is not set`;
  console.log(`  ${suite.port.padEnd(14)} ${suite.engine.padEnd(18)} ${target}`);
}

const dir = mkdtempSync(join(tmpdir(), 'elma-engines-'));
const output = join(dir, 'report.json');
const run = spawnSync(
  'npx',
  ['vitest', 'run', ...suites.map((s) => s.file), '--reporter=default', '--reporter=json', `--outputFile.json=${output}`],
  { stdio: 'inherit', env: process.env },
);

let report: JsonReport | undefined;
try {
  report = JSON.parse(readFileSync(output, 'utf8')) as JsonReport;
} catch {
  console.error('no test report was written');
}
rmSync(dir, { recursive: true, force: true });

let failedTotal = 0;
console.log('\nEngines the contract suites ran against:');
for (const suite of suites) {
  const result = report?.testResults.find((r) => relative(process.cwd(), r.name) === suite.file);
  const count = (status: string) => result?.assertionResults.filter((a) => a.status === status).length ?? 0;
  const passed = count('passed');
  const failed = count('failed');
  const skipped = count('skipped') + count('pending') + count('todo');
  failedTotal += failed;
  // A production suite runs against its engine only with its URL; without it only the checks that need no server run.
  const ran = suite.variable ? Boolean(process.env[suite.variable]) : passed + failed > 0;
  const figures = `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
  console.log(`  ${suite.port.padEnd(14)} ${suite.engine.padEnd(18)} ${ran ? `ran: ${figures}` : `did not run against a server (${suite.variable} not set; ${figures})`}`);
}
process.exit(run.status !== 0 || failedTotal > 0 ? 1 : 0);
