// Plain JavaScript (types in install.d.mts, re-exported by index.ts) so that scripts/ensure-mem0.mjs runs it with
// node alone. Only the evaluation's Mem0 baseline (row B5) and `npm run bench:peers` need the package; ELMA itself
// never runs it.
import { join } from 'node:path';
import { findRepoRoot } from '../tools/repo-root.mjs';
import { pinnedPythonTool } from '../tools/pinned-python.mjs';

/** The pinned Mem0 OSS release (PyPI `mem0ai`, Apache-2.0); its dependencies are pinned in requirements.txt. */
export const MEM0_VERSION = '2.2.1';
const REPO = findRepoRoot();
/** The JSON-lines bridge the TypeScript row talks to. */
export const MEM0_BRIDGE = join(REPO, 'scripts', 'mem0', 'bridge.py');

/** Where `ensureMem0` installs the packages: `<repo>/.tools/mem0` (git-ignored), run with PYTHONPATH set to it. */
export const PROJECT_MEM0_DIR = join(REPO, '.tools', 'mem0');

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

const tool = pinnedPythonTool({
  name: 'mem0',
  label: "Mem0 (the evaluation's row B5)",
  distribution: 'mem0ai',
  version: MEM0_VERSION,
  requirements: join(REPO, 'scripts', 'mem0', 'requirements.txt'),
  dir: PROJECT_MEM0_DIR,
  importCheck: 'mem0',
  env: mem0Env,
  unavailable: Mem0Unavailable,
  howToRetry: 'node scripts/ensure-mem0.mjs',
});

/**
 * The project-local Mem0 when it is installed at the pinned version and requirements, without installing
 * anything: `{ dir, python, version }`; undefined otherwise.
 * @returns {{ dir: string; python: string; version: string } | undefined}
 */
export const findMem0 = () => tool.find();

/**
 * Returns the project-local Mem0, installing the pinned requirements into `.tools/mem0` with pip when it is
 * missing or stale (about 250 MB; under a minute). Idempotent: a finished install is found by its record.
 * Progress goes to stderr. Throws Mem0Unavailable when there is no Python with pip, Error when pip fails or
 * the installed package does not import at the pinned version.
 * @returns {Promise<{ dir: string; python: string; version: string }>}
 */
export const ensureMem0 = () => tool.ensure();
