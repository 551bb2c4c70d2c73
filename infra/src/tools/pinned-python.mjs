// Plain JavaScript (types in pinned-python.d.mts) so that the scripts/ensure-*.mjs installers run it with node alone.
// A Python package the repository pins with all its requirements and installs project-locally (`pip --target`),
// for baselines and peers that ELMA itself never runs: Mem0 (the evaluation's row B5, `npm run bench:peers`) and
// LangGraph's store (`npm run bench:peers`).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipInstallTarget } from './pip-install.mjs';

/**
 * One pinned, project-local Python package: `find()` says whether it is installed at the pinned version and
 * requirements, `ensure()` installs it when it is not.
 *
 * What an install records (`elma-<name>.json` in `dir`): the version, the Python that installed it (pip --target
 * installs native wheels built for that interpreter, so whatever runs it must use the same one) and the digest of
 * the requirements it installed (edited requirements mean a new install).
 * @param {{ name: string; label: string; distribution: string; version: string; requirements: string; dir: string;
 *   importCheck: string; env: (dir: string) => Record<string, string>; unavailable: new (message: string) => Error;
 *   howToRetry: string }} spec
 *   label: how messages name it; distribution: the pip name whose version is checked; importCheck: a module
 *   `import`ed to prove the install works; env: the environment of every Python that imports it (PYTHONPATH among
 *   it); unavailable: the error thrown when no Python with pip exists; howToRetry: the command that installs it.
 */
export function pinnedPythonTool(spec) {
  const record = join(spec.dir, `elma-${spec.name}.json`);
  const digest = () => createHash('sha256').update(readFileSync(spec.requirements)).digest('hex');

  /** @returns {{ dir: string; python: string; version: string } | undefined} */
  function find() {
    try {
      const recorded = JSON.parse(readFileSync(record, 'utf8'));
      if (recorded.version !== spec.version || recorded.requirements !== digest()) return undefined;
      if (!existsSync(recorded.python) || !existsSync(join(spec.dir, spec.importCheck.split('.')[0]))) return undefined;
      return { dir: spec.dir, python: recorded.python, version: recorded.version };
    } catch {
      return undefined;
    }
  }

  /** The version pip recorded for the distribution, under `python`, once `importCheck` imports; else undefined. */
  function importedVersion(python) {
    const code = `import importlib.metadata as m, ${spec.importCheck}; print(m.version(${JSON.stringify(spec.distribution)}))`;
    const run = spawnSync(python, ['-c', code], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, ...spec.env(join(spec.dir, 'home')) },
    });
    return run.status === 0 ? run.stdout.trim() : undefined;
  }

  /** @returns {Promise<{ dir: string; python: string; version: string }>} */
  async function ensure() {
    const found = find();
    if (found) return found;
    process.stderr.write(
      `[elma] ${spec.label} not found; installing ${spec.distribution}==${spec.version} and its pinned requirements into ${spec.dir}\n`,
    );
    const installed = await pipInstallTarget(spec.dir, ['-r', spec.requirements], (python) => {
      const version = importedVersion(python);
      return version === spec.version
        ? { ok: true, value: version }
        : { ok: false, failure: `installed, but \`import ${spec.importCheck}\` gave ${version ?? 'an error'}, not ${spec.version}` };
    });
    if (installed.ok) {
      writeFileSync(record, `${JSON.stringify({ version: spec.version, python: installed.python, requirements: digest() }, null, 2)}\n`);
      process.stderr.write(`[elma] ${spec.label} ${spec.version} ready for ${installed.python}\n`);
      return { dir: spec.dir, python: installed.python, version: spec.version };
    }
    const message = [
      `${spec.label} (${spec.distribution}==${spec.version}) is not installed and could not be installed.`,
      ...installed.failures.map((f) => `  - ${f}`),
      `Install it yourself (Python 3.10+ with pip: \`python3 -m pip install --target ${spec.dir} -r ${spec.requirements}\`),`,
      `then run \`${spec.howToRetry}\`.`,
    ].join('\n');
    throw installed.anyPip ? new Error(message) : new spec.unavailable(message);
  }

  return { find, ensure };
}
