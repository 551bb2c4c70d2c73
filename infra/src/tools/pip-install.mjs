// Plain JavaScript: used by the installers of the embedding model and the OpenBao server, which scripts run with
// node alone.
import { spawnSync } from 'node:child_process';
import { runStreamed } from './run-streamed.mjs';

/** The Python commands tried in turn. */
const PYTHONS = ['python3', 'python'];

/**
 * Installs `pkg` (a requirement, or several as pip takes them: `['-r', file]`) into the folder `target`
 * (`pip install --target`) with the first Python that has pip and after
 * whose install `accept` finds what it needs. Progress goes to stderr. Every Python that fails is a line in
 * `failures`; `anyPip` says whether any Python had pip at all (without one the tool is unavailable rather than
 * broken).
 * @template T
 * @param {string} target
 * @param {string | string[]} pkg
 * @param {(python: string) => { ok: true; value: T } | { ok: false; failure: string }} accept
 *   called once pip succeeded with that Python; `failure` completes "<python> -m pip: ".
 * @param {{ announce?: boolean; pipArgs?: string[] }} [options] announce: say which Python is tried before each attempt;
 *   pipArgs: more arguments for `pip install` (`--no-deps` to take a package's files without its dependencies).
 * @returns {Promise<{ ok: true; python: string; value: T } | { ok: false; failures: string[]; anyPip: boolean }>}
 */
export async function pipInstallTarget(target, pkg, accept, options = {}) {
  /** @type {string[]} */
  const failures = [];
  let anyPip = false;
  for (const command of PYTHONS) {
    const probe = spawnSync(command, ['-c', 'import sys, pip; print(sys.executable)'], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0) {
      failures.push(`${command}: ${probe.error ? 'not found' : 'no pip module'}`);
      continue;
    }
    anyPip = true;
    const python = probe.stdout.trim();
    if (options.announce) process.stderr.write(`[elma] trying ${python} -m pip ...\n`);
    const args = [
      '-m',
      'pip',
      'install',
      '--disable-pip-version-check',
      '--no-input',
      '--upgrade',
      ...(options.pipArgs ?? []),
      '--target',
      target,
      ...[pkg].flat(),
    ];
    const outcome = await runStreamed(python, args);
    if (!outcome.ok) {
      failures.push(`${python} -m pip: ${outcome.reason}`);
      continue;
    }
    const accepted = accept(python);
    if (accepted.ok) return { ok: true, python, value: accepted.value };
    failures.push(`${python} -m pip: ${accepted.failure}`);
  }
  return { ok: false, failures, anyPip };
}
