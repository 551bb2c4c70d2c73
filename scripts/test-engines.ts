/**
 * `npm run test:engines`: the engine contract suites, against the embedded
 * adapters always and against the production adapters whose URL variables
 * are set (ELMA_EVENTSTORE_URL, ELMA_ELASTICSEARCH_URL). Prints which engines
 * ran and how each fared, and fails when any ran test failed.
 * `--engine Elasticsearch` (repeatable) keeps the suites of the engines named.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { EngineTestResult } from './engines-reporter';
import { ENGINE_SUITES, type EngineSuite } from './engine-suites';

const { values } = parseArgs({ options: { engine: { type: 'string', multiple: true } } });
const wanted = values.engine?.map((e) => e.toLowerCase());
const suites = ENGINE_SUITES.filter((s) => !wanted || wanted.some((e) => s.engine.toLowerCase().startsWith(e)));
if (suites.length === 0) {
  console.error(
    `no engine suite matches --engine ${values.engine?.join(', ')}; engines: ${[...new Set(ENGINE_SUITES.map((s) => s.engine))].join(', ')}`,
  );
  process.exit(2);
}

const redact = (url: string) => url.replace(/\/\/[^@/]*@/, '//***@');

/** What the server behind a URL says it is (`Elasticsearch 9.5.3`), or nothing when it does not answer `GET /`. */
async function serverVersion(suite: EngineSuite, url: string): Promise<string | undefined> {
  if (suite.variable !== 'ELMA_ELASTICSEARCH_URL') return undefined;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    const body = (await response.json()) as { version?: { number?: string } };
    return body.version?.number ? `Elasticsearch ${body.version.number}` : undefined;
  } catch {
    return undefined;
  }
}

/** Why a test was skipped: its `context.skip(note)`, else the `(skipped: …)` its suite's title carries. */
function skipReason(test: EngineTestResult): string {
  return test.note ?? /\(skipped: ([^)]*)\)/.exec(test.name)?.[1] ?? 'no reason given';
}

console.log('Engine contract suites:');
for (const suite of suites) {
  const url = suite.variable ? process.env[suite.variable] : undefined;
  const version = url ? await serverVersion(suite, url) : undefined;
  const target = !suite.variable
    ? 'always'
    : url
      ? `${suite.variable}=${redact(url)}${version ? ` (${version})` : ''}`
      : `skipped: ${suite.variable} is not set`;
  console.log(`  ${suite.port.padEnd(16)} ${suite.engine.padEnd(18)} ${target}`);
}

const dir = mkdtempSync(join(tmpdir(), 'elma-engines-'));
const output = join(dir, 'report.json');
const files = [...new Set(suites.map((s) => s.file))];
const run = spawnSync(
  'npx',
  [
    'vitest',
    'run',
    ...files,
    '--reporter=default',
    '--reporter=./scripts/engines-reporter.ts',
    '--reporter=./tests/support/slowest-files-reporter.ts',
  ],
  {
    stdio: 'inherit',
    env: { ...process.env, ELMA_ENGINES_REPORT: output },
  },
);

let report: EngineTestResult[] = [];
try {
  report = JSON.parse(readFileSync(output, 'utf8')) as EngineTestResult[];
} catch {
  console.error('no test report was written');
}
rmSync(dir, { recursive: true, force: true });

let failedTotal = 0;
console.log('\nEngines the contract suites ran against:');
for (const suite of suites) {
  const tests = report.filter((t) => t.file === suite.file && (!suite.match || t.name.includes(suite.match)));
  const of = (...states: string[]) => tests.filter((t) => states.includes(t.state));
  const passed = of('passed').length;
  const failed = of('failed').length;
  const skipped = of('skipped', 'pending');
  failedTotal += failed;
  const reasons = [...new Set(skipped.map(skipReason))];
  // A production suite runs against its engine only with its URL; without it only the checks that need no server run.
  const ran = suite.variable ? Boolean(process.env[suite.variable]) : passed + failed > 0;
  const figures = `passed ${passed} · failed ${failed} · skipped ${skipped.length}${reasons.length ? ` (${reasons.join('; ')})` : ''}`;
  console.log(
    `  ${suite.port.padEnd(16)} ${suite.engine.padEnd(18)} ${ran ? `ran: ${figures}` : `did not run against a server (${suite.variable} not set; ${figures})`}`,
  );
}
process.exit(run.status !== 0 || failedTotal > 0 || report.length === 0 ? 1 : 0);
