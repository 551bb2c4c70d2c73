import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { loadConfig } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, type Elma } from '@elma/runtime';

/**
 * An embedded ELMA (hashing embedder, projection running) in a fresh data
 * folder for the specs of one `describe`: opened before them, closed and its
 * folder removed after them. `elma` is set once the specs run.
 */
export function scratchElma(prefix: string): { readonly dataDir: string; readonly elma: Elma } {
  const dataDir = mkdtempSync(join(tmpdir(), `elma-${prefix}-`));
  let elma: Elma | undefined;
  beforeAll(async () => {
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
    await elma.runner.start();
  });
  afterAll(async () => {
    await elma?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    dataDir,
    get elma() {
      if (!elma) throw new Error('scratchElma: used before its beforeAll ran');
      return elma;
    },
  };
}
