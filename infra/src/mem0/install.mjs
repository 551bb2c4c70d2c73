// Plain JavaScript (types in install.d.mts, re-exported by index.ts) so that scripts/ensure-mem0.mjs runs it with
// node alone. Only the evaluation's Mem0 baseline (row B5) needs the package; ELMA itself never runs it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findRepoRoot } from '../tools/repo-root.mjs';
import { pipInstallTarget } from '../tools/pip-install.mjs';

/** The pinned Mem0 OSS release (PyPI `mem0ai`, Apache-2.0); its dependencies are pinned in requirements.txt. */
export const MEM0_VERSION = '2.2.1';
const REPO = findRepoRoot();
const REQUIREMENTS = join(REPO, 'scripts', 'mem0', 'requirements.txt');
/** The JSON-lines bridge the TypeScript row talks to. */
export const MEM0_BRIDGE = join(REPO, 'scripts', 'mem0', 'bridge.py');

/** Where `ensureMem0` installs the packages: `<repo>/.tools/mem0` (git-ignored), run with PYTHONPATH set to it. */
export const PROJECT_MEM0_DIR = join(REPO, '.tools', 'mem0');
/**
 * What the install recorded: the version, the Python that installed it (pip --target installs numpy and grpcio
 * built for that interpreter, so the bridge must run under the same one) and the digest of the requirements it
 * installed (edited requirements mean a new install).
 */
const RECORD = join(PROJECT_MEM0_DIR, 'elma-mem0.json');

/**
 * Environment of every Python that imports mem0: its telemetry (PostHog events, and the notices whose text it
 * fetches from the network) is off, and its home folder (`~/.mem0`, where it writes a user id) is `home`.
 * `mem0/memory/telemetry.py` reads MEM0_TELEMETRY; `mem0/memory/notices.py` returns early when it is off.
 * @param {string} home
 * @returns {Record<string, string>}
 */
export function mem0Env(home) {
  return { MEM0_TELEMETRY: 'False', MEM0_DIR: home, PYTHONPATH: PROJECT_MEM0_DIR, PYTHONDONTWRITEBYTECODE: '1' };
}

/** No Python (or no pip) on this machine: Mem0 cannot be installed here. */
export class Mem0Unavailable extends Error {
  code = 'EVAL.MEM0_UNAVAILABLE';
}

/**
 * The project-local Mem0 when it is installed at the pinned version and requirements, without installing
 * anything: `{ dir, python, version }`; undefined otherwise.
 * @returns {{ dir: string; python: string; version: string } | undefined}
 */
export function findMem0() {
  try {
    const record = JSON.parse(readFileSync(RECORD, 'utf8'));
    if (record.version !== MEM0_VERSION || record.requirements !== requirementsDigest()) return undefined;
    if (!existsSync(record.python) || !existsSync(join(PROJECT_MEM0_DIR, 'mem0', '__init__.py'))) return undefined;
    return { dir: PROJECT_MEM0_DIR, python: record.python, version: record.version };
  } catch {
    return undefined;
  }
}

/**
 * Returns the project-local Mem0, installing the pinned requirements into `.tools/mem0` with pip when it is
 * missing or stale (about 200 MB; under a minute). Idempotent: a finished install is found by its record.
 * Progress goes to stderr. Throws Mem0Unavailable when there is no Python with pip, Error when pip fails or
 * the installed package does not import at the pinned version.
 * @returns {Promise<{ dir: string; python: string; version: string }>}
 */
export async function ensureMem0() {
  const found = findMem0();
  if (found) return found;
  process.stderr.write(`[elma] Mem0 not found; installing mem0ai==${MEM0_VERSION} and its pinned requirements into ${PROJECT_MEM0_DIR}\n`);
  const installed = await pipInstallTarget(PROJECT_MEM0_DIR, ['-r', REQUIREMENTS], (python) => {
    const version = importedVersion(python);
    return version === MEM0_VERSION
      ? { ok: true, value: version }
      : { ok: false, failure: `installed, but \`import mem0\` gave ${version ?? 'an error'}, not ${MEM0_VERSION}` };
  });
  if (installed.ok) {
    const record = { version: MEM0_VERSION, python: installed.python, requirements: requirementsDigest() };
    writeFileSync(RECORD, `${JSON.stringify(record, null, 2)}\n`);
    process.stderr.write(`[elma] Mem0 ${MEM0_VERSION} ready for ${installed.python}\n`);
    return { dir: PROJECT_MEM0_DIR, python: installed.python, version: MEM0_VERSION };
  }
  const { failures, anyPip } = installed;
  const message = [
    `Mem0 (mem0ai==${MEM0_VERSION}, the evaluation's row B5) is not installed and could not be installed.`,
    ...failures.map((f) => `  - ${f}`),
    `Install it yourself (Python 3.10+ with pip: \`python3 -m pip install --target ${PROJECT_MEM0_DIR} -r ${REQUIREMENTS}\`),`,
    'then run `node scripts/ensure-mem0.mjs`.',
  ].join('\n');
  throw anyPip ? new Error(message) : new Mem0Unavailable(message);
}

/**
 * The version `import mem0` reports under `python` with the project-local packages, telemetry off; undefined
 * when it does not import.
 * @param {string} python
 * @returns {string | undefined}
 */
function importedVersion(python) {
  const run = spawnSync(python, ['-c', 'import importlib.metadata as m, mem0; print(m.version("mem0ai"))'], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ...mem0Env(join(PROJECT_MEM0_DIR, 'home')) },
  });
  return run.status === 0 ? run.stdout.trim() : undefined;
}

/** SHA-256 of requirements.txt. */
function requirementsDigest() {
  return createHash('sha256').update(readFileSync(REQUIREMENTS)).digest('hex');
}
