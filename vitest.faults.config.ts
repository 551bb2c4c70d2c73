import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * `npm run test:faults`: the operator's failure scenarios (a process killed
 * mid-step, a full disk, a corrupt file, Temporal down). Each runs real
 * processes against real files, so they run one file at a time and apart
 * from `npm test`.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['{domain,shared,infra,application,activities,workflows,apps/*}/src/**/*.faults.spec.ts', 'tests/**/*.faults.spec.ts'],
    exclude: ['**/node_modules/**'],
    fileParallelism: false,
    testTimeout: 180_000,
  },
});
