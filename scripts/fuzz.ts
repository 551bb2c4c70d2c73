// `npm run fuzz [-- --duration SECONDS]`: schemathesis, a schema-based fuzzer nobody here wrote, against a
// freshly started embedded ELMA (own temporary data folder, free ports, own Temporal dev server), for a
// bounded time. Fails on any 5xx, any response that does not match /docs/openapi.json, and any status the
// document does not list. Prints operations, cases and failures, then `fuzz result: N operations ok, M operations failing`, which .ci/run counts.
// Needs no network beyond the package registry that pip installs schemathesis from (once, into .tools/).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig, mintToken } from '@elma/infra';
import { embeddedStartEnv, spawnElmaStart } from '../apps/cli/src/embedded-env';
import { lineMapper, withoutRunnerClosingLine } from './runner-lines';

/** Pinned: a new release may add checks or change generation, which should be a reviewed change here. */
const SCHEMATHESIS_PACKAGE = 'schemathesis==4.32.5';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const TOOL_DIR = join(repoRoot, '.tools', 'schemathesis');
/** Written after a successful install: the package spec and the interpreter that installed it. */
const MARKER = join(TOOL_DIR, '.elma-installed.json');

/** What the run fails on (see `st run --help`); schema-based only, so no check needs ids the fuzzer cannot know. */
const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_schema_conformance',
  'response_headers_conformance',
];

/** Roles that reach every operation, so the fuzzer gets past 401 and 403 to the handlers. */
const ROLES = ['agent', 'admin', 'auditor', 'compliance', 'dpo', 'legal', 'reviewer'];

const DEFAULT_SECONDS = 180;

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      duration: { type: 'string', default: process.env.ELMA_FUZZ_SECONDS ?? String(DEFAULT_SECONDS) },
      seed: { type: 'string', default: process.env.ELMA_FUZZ_SEED },
      'keep-report': { type: 'boolean', default: false },
    },
  });
  const seconds = Number(values.duration);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 6 * 3600) throw new Error('--duration takes whole seconds, 1 to 21600');

  const python = await ensureSchemathesis();
  const workDir = mkdtempSync(join(tmpdir(), 'elma-fuzz-'));
  const dataDir = join(workDir, 'data');
  const reportDir = join(workDir, 'report');
  let server: Server | undefined;
  try {
    log(`starting ELMA on ${dataDir}`);
    server = await startElma(dataDir);
    // Signed with the data folder's own secret; expires (ELMA refuses tokens without `exp`), within a day.
    const token = await mintToken(
      loadConfig({ ELMA_DATA_DIR: dataDir }).jwtSecret,
      { tenant: 'fuzz', sub: 'fuzzer', roles: ROLES, purposes: ['support', 'billing', 'analytics', 'research'], clearance: 'restricted' },
      { ttlSeconds: Math.min(24 * 3600, seconds + 3600) },
    );
    const schema = `${server.url}/docs/openapi.json`;
    log(`schemathesis for ${seconds} s against ${schema}; checks: ${CHECKS.join(', ')}`);
    const args = [
      '-m',
      'schemathesis.cli',
      'run',
      schema,
      '--checks',
      CHECKS.join(','),
      '--header',
      `Authorization: Bearer ${token}`,
      '--max-time',
      String(seconds),
      '--workers',
      '1',
      '--request-timeout',
      '30',
      '--report',
      'junit',
      '--report-junit-path',
      join(reportDir, 'junit.xml'),
      '--no-color',
      '--generation-database',
      'none',
      ...(values.seed ? ['--seed', values.seed] : []),
    ];
    const { status, stdout } = await run(python, args, { cwd: workDir, env: pythonEnv(), mapLine: withoutRunnerClosingLine });
    const summary = summarise(join(reportDir, 'junit.xml'));
    // Schemathesis prints `Test cases:` then `  N generated, ...`; its JUnit report has no case count.
    const cases = /Test cases:\s*\n\s*(\d+) generated/.exec(stdout)?.[1] ?? '?';
    await server.stop();
    const errors = server.serverErrors();
    if (errors.length) log(`ELMA logged ${errors.length} server error(s):\n${errors.join('\n')}`);
    console.log(
      `fuzz: ${summary.operations} tests (each operation, and the stateful phase), ${cases} cases, ${summary.failures} failing${summary.failedOperations.length ? ` (${summary.failedOperations.join('; ')})` : ''}`,
    );
    // A non-zero exit with no failed operation (a crash, an unreachable schema) still fails the run.
    const failed = summary.failedOperations.length || (status === 0 ? 0 : 1);
    console.log(`fuzz result: ${summary.operations - summary.failedOperations.length} operations ok, ${failed} operations failing`);
    if (values['keep-report']) log(`report kept in ${reportDir}`);
    return status === 0 && failed === 0 ? 0 : 1;
  } finally {
    await server?.stop();
    if (!values['keep-report']) rmSync(workDir, { recursive: true, force: true });
    else rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Operations and the failing ones from schemathesis' JUnit report (one test case per operation; stateful
 * scenarios add one more), each failing one with its failure codes (ST101 server error, ST103 undocumented status…).
 */
function summarise(junit: string): { operations: number; failures: number; failedOperations: string[] } {
  if (!existsSync(junit)) return { operations: 0, failures: 0, failedOperations: [] };
  const xml = readFileSync(junit, 'utf8');
  const testcases = [...xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)];
  const failing = testcases.filter((t) => /<(failure|error)\b/.test(t[3] ?? ''));
  const failedOperations = failing.map(
    (t) => `${attribute(t[1], 'name')}: ${/<(?:failure|error)\b[^>]*message="([^"]*)"/.exec(t[3])?.[1] ?? 'error'}`,
  );
  return { operations: testcases.length, failures: failing.length, failedOperations };
}

const attribute = (attrs: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(attrs)?.[1] ?? '?';

/**
 * A schemathesis that runs: the pinned package under `.tools/schemathesis`, installed with pip (`--target`,
 * so nothing outside the project changes) when missing. Idempotent: a finished install leaves a marker
 * naming the package and the interpreter, and is reused while both match. Throws a clear error without pip.
 */
async function ensureSchemathesis(): Promise<string> {
  const installed = existsSync(MARKER) ? (JSON.parse(readFileSync(MARKER, 'utf8')) as { package: string; python: string }) : undefined;
  if (installed?.package === SCHEMATHESIS_PACKAGE && works(installed.python)) return installed.python;

  const failures: string[] = [];
  for (const python of ['python3', 'python']) {
    const pip = spawnSync(python, ['-m', 'pip', '--version'], { encoding: 'utf8' });
    if (pip.status !== 0) {
      failures.push(`${python} -m pip: ${pip.error?.message ?? (pip.stderr.trim().split('\n').pop() || `exit ${pip.status}`)}`);
      continue;
    }
    log(`installing ${SCHEMATHESIS_PACKAGE} into ${TOOL_DIR} with ${python} -m pip`);
    rmSync(TOOL_DIR, { recursive: true, force: true });
    const { status } = await run(
      python,
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--quiet', '--target', TOOL_DIR, SCHEMATHESIS_PACKAGE],
      {
        cwd: repoRoot,
        env: process.env,
        output: process.stderr,
      },
    );
    if (status === 0 && works(python)) {
      writeFileSync(MARKER, JSON.stringify({ package: SCHEMATHESIS_PACKAGE, python }));
      return python;
    }
    failures.push(`${python} -m pip install: ${status === 0 ? 'installed, but schemathesis does not run' : `exit ${status}`}`);
  }
  throw new Error(
    [
      `schemathesis is not installed and could not be installed (${SCHEMATHESIS_PACKAGE} needs Python 3.9+ with pip).`,
      ...failures.map((f) => `  - ${f}`),
      `Install pip (e.g. apt-get install python3-pip), or run \`python3 -m pip install --target ${TOOL_DIR} ${SCHEMATHESIS_PACKAGE}\` yourself.`,
    ].join('\n'),
  );
}

const pythonEnv = (): NodeJS.ProcessEnv => ({ ...process.env, PYTHONPATH: TOOL_DIR, PYTHONDONTWRITEBYTECODE: '1', NO_COLOR: '1' });

function works(python: string): boolean {
  return spawnSync(python, ['-m', 'schemathesis.cli', '--version'], { env: pythonEnv(), encoding: 'utf8' }).status === 0;
}

interface Server {
  url: string;
  stop(): Promise<void>;
  /** ELMA's `request failed` log lines: the request id and error class of each 500 it answered. */
  serverErrors(): string[];
}

/** `elma start` on its own data folder, free ports and Temporal dev server, as an operator runs it. */
async function startElma(dataDir: string): Promise<Server> {
  const { env, port } = await embeddedStartEnv(dataDir, 'error');
  const serverErrors: string[] = [];
  let partial = '';
  const elma = await spawnElmaStart(env, {
    readyTimeoutMs: 120_000,
    stopGraceMs: 30_000,
    onOutput: (chunk) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) if (line.includes('"request failed"') && serverErrors.length < 100) serverErrors.push(line);
    },
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => elma.stop(),
    serverErrors: () => serverErrors,
  };
}

/**
 * Runs a command with its output passed through (each stdout line through `mapLine`); resolves with its exit
 * status and what it printed on stdout, unmapped.
 */
function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; output?: NodeJS.WritableStream; mapLine?: (line: string) => string },
): Promise<{ status: number; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = options.output ?? process.stdout;
    const printer = lineMapper(options.mapLine ?? ((line) => line), (text) => out.write(text));
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      printer.push(chunk);
      stdout = (stdout + chunk).slice(-100_000);
    });
    child.stdout.on('end', () => printer.end());
    child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    child.on('error', (error) => {
      process.stderr.write(`${command}: ${error.message}\n`);
      resolve({ status: 127, stdout });
    });
    child.on('close', (code) => resolve({ status: code ?? 1, stdout }));
  });
}

const log = (message: string) => process.stderr.write(`[fuzz] ${message}\n`);

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`fuzz: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
