import { join } from 'node:path';
import { createProjectGraphAsync } from '@nx/devkit';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The lint boundary rules fail on a deliberately wrong import. Each case lints
 * a small source text as if it were a file at the given path (the file need
 * not exist), with the repository's own eslint.config.mjs.
 */
const root = join(import.meta.dirname, '..');
let eslint: ESLint;

async function lint(path: string, source: string) {
  const [result] = await eslint.lintText(source, { filePath: join(root, path) });
  return result.messages;
}

async function rulesFiredFor(path: string, source: string): Promise<string[]> {
  return (await lint(path, source)).map((m) => m.ruleId ?? m.message);
}

/** The Nx rule's message: a lower package importing a higher one closes a cycle; anything else breaks a tag constraint. */
async function boundaryMessages(path: string, source: string): Promise<string[]> {
  return (await lint(path, source)).filter((m) => m.ruleId === '@nx/enforce-module-boundaries').map((m) => m.message);
}

beforeAll(async () => {
  // @nx/enforce-module-boundaries reads the cached project graph and skips itself when there is none.
  process.env.NX_DAEMON = 'false';
  await createProjectGraphAsync({ exitOnError: false });
  eslint = new ESLint({ cwd: root });
}, 120_000);

describe('lint boundaries', () => {
  it('fails when infra imports activities (a lower package importing a higher one)', async () => {
    const rules = await rulesFiredFor(
      'infra/src/event-log/wrong.ts',
      "import { createErasureActivities } from '@elma/activities';\nexport const x = createErasureActivities;\n",
    );
    expect(rules).toContain('@nx/enforce-module-boundaries');
  });

  it('fails when domain imports infra', async () => {
    const rules = await rulesFiredFor('domain/src/wrong.ts', "import { loadConfig } from '@elma/infra';\nexport const x = loadConfig;\n");
    expect(rules).toContain('@nx/enforce-module-boundaries');
  });

  it('fails when an adapter inside infra imports a use-case folder', async () => {
    const rules = await rulesFiredFor(
      'infra/src/memory-index/sqlite/wrong.ts',
      "import { RecallService } from '../../recall/recall-service';\nexport const x = RecallService;\n",
    );
    expect(rules).toContain('elma/infra-layers');
  });

  it('names the cycle when a lower package imports a higher one, and the tags when no cycle is closed', async () => {
    expect(
      await boundaryMessages('domain/src/wrong.ts', "import { loadConfig } from '@elma/infra';\nexport const x = loadConfig;\n"),
    ).toEqual([expect.stringContaining('Circular dependency between "@elma/domain" and "@elma/infra"')]);
    expect(
      await boundaryMessages(
        'workflows/src/erasure/wrong.ts',
        "import { silentLogger } from '@elma/infra';\nexport const x = silentLogger;\n",
      ),
    ).toEqual([expect.stringContaining('A project tagged with "type:workflow" can only depend on libs tagged with')]);
  });

  it('fails when a workflow imports a value (not a type) of ours', async () => {
    const rules = await rulesFiredFor(
      'workflows/src/erasure/wrong.ts',
      "import { silentLogger } from '@elma/infra';\nexport const x = silentLogger;\n",
    );
    expect(rules).toEqual(expect.arrayContaining(['@nx/enforce-module-boundaries', '@typescript-eslint/no-restricted-imports']));
  });

  it('passes the same imports where the direction is right', async () => {
    expect(
      await rulesFiredFor('apps/cli/src/right.ts', "import { loadConfig } from '@elma/infra';\nexport const x = loadConfig;\n"),
    ).toEqual([]);
    expect(
      await rulesFiredFor('infra/src/recall/right.ts', "import { countTokens } from './token-counter';\nexport const x = countTokens;\n"),
    ).toEqual([]);
    expect(
      await rulesFiredFor(
        'workflows/src/erasure/right.ts',
        "import type { ErasureActivities } from '@elma/activities';\nexport type X = ErasureActivities;\n",
      ),
    ).toEqual([]);
  });
});
