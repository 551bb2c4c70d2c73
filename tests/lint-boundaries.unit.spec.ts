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

const importing = (symbol: string, from: string) => `import { ${symbol} } from '${from}';\nexport const x = ${symbol};\n`;

describe('lint boundaries', () => {
  it('fails when a use case imports an adapter package (application -> infra)', async () => {
    expect(await boundaryMessages('application/src/erasure/wrong.ts', importing('SqliteEventLog', '@elma/infra'))).toEqual([
      expect.stringContaining('A project tagged with "type:application" can only depend on libs tagged with'),
    ]);
  });

  it('fails when an adapter imports a use case (infra -> application)', async () => {
    expect(await boundaryMessages('infra/src/memory-index/sqlite/wrong.ts', importing('RecallService', '@elma/application'))).toEqual([
      expect.stringContaining('A project tagged with "type:infra" can only depend on libs tagged with'),
    ]);
  });

  it('fails when infra imports activities (a lower package importing a higher one)', async () => {
    const rules = await rulesFiredFor('infra/src/event-log/wrong.ts', importing('createErasureActivities', '@elma/activities'));
    expect(rules).toContain('@nx/enforce-module-boundaries');
  });

  it('fails when domain imports any package of ours', async () => {
    for (const [symbol, from] of [
      ['silentLogger', '@elma/shared'],
      ['loadConfig', '@elma/infra'],
      ['RecallService', '@elma/application'],
      ['createErasureActivities', '@elma/activities'],
      ['openElma', '@elma/runtime'],
    ]) {
      expect(await rulesFiredFor('domain/src/wrong.ts', importing(symbol, from)), from).toContain('@nx/enforce-module-boundaries');
    }
  });

  it('fails when shared imports an adapter or a use case', async () => {
    expect(await rulesFiredFor('shared/src/wrong.ts', importing('loadConfig', '@elma/infra'))).toContain('@nx/enforce-module-boundaries');
    expect(await rulesFiredFor('shared/src/wrong.ts', importing('RecallService', '@elma/application'))).toContain(
      '@nx/enforce-module-boundaries',
    );
  });

  it('names the cycle when a lower package imports a higher one, and the tags when no cycle is closed', async () => {
    expect(await boundaryMessages('domain/src/wrong.ts', importing('loadConfig', '@elma/infra'))).toEqual([
      expect.stringContaining('Circular dependency between "@elma/domain" and "@elma/infra"'),
    ]);
    expect(await boundaryMessages('workflows/src/erasure/wrong.ts', importing('silentLogger', '@elma/shared'))).toEqual([
      expect.stringContaining('A project tagged with "type:workflow" can only depend on libs tagged with'),
    ]);
  });

  it('fails when a workflow imports a value (not a type) of ours', async () => {
    const rules = await rulesFiredFor('workflows/src/erasure/wrong.ts', importing('silentLogger', '@elma/shared'));
    expect(rules).toEqual(expect.arrayContaining(['@nx/enforce-module-boundaries', '@typescript-eslint/no-restricted-imports']));
  });

  it('fails when the client SDK imports anything of the server (it is used outside this repository)', async () => {
    for (const [symbol, from] of [
      ['MemoryRecord', '@elma/domain'],
      ['silentLogger', '@elma/shared'],
      ['createApi', '@elma/api'],
    ]) {
      expect(await boundaryMessages('clients/typescript/src/wrong.ts', importing(symbol, from)), from).toEqual([
        expect.stringContaining('A project tagged with "type:client" cannot depend on any libs'),
      ]);
    }
  });

  it('passes the imports that go the right way', async () => {
    for (const [path, symbol, from] of [
      ['apps/cli/src/right.ts', 'loadConfig', '@elma/infra'],
      ['apps/runtime/src/right.ts', 'RecallService', '@elma/application'],
      ['application/src/recall/right.ts', 'countTokens', '@elma/shared'],
      ['application/src/recall/right.ts', 'MemoryStatus', '@elma/domain'],
      ['infra/src/memory-index/right.ts', 'countTokens', '@elma/shared'],
      ['shared/src/right.ts', 'DomainError', '@elma/domain'],
      ['activities/src/erasure/right.ts', 'ErasureService', '@elma/application'],
      ['infra/src/memory-index/sqlite/right.ts', 'scanFiles', '../../raw-scan/byte-scan'],
      ['apps/cli/src/right.ts', 'Elma', '@elma/client'],
    ]) {
      expect(await rulesFiredFor(path, importing(symbol, from)), `${path} -> ${from}`).toEqual([]);
    }
    expect(
      await rulesFiredFor(
        'workflows/src/erasure/right.ts',
        "import type { ErasureActivities } from '@elma/activities';\nexport type X = ErasureActivities;\n",
      ),
    ).toEqual([]);
  });
});
