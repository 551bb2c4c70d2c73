import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * `npm run test:browser`: the compliance console end to end in a real Chromium (Debian's, installed by
 * scripts/ensure-chromium.sh; driven by playwright-core) against a real ELMA on the run's Temporal dev server.
 * Screenshots are written to artifacts/console/. One file at a time: each starts browsers besides the app.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['{domain,shared,infra,application,activities,workflows,apps/*}/src/**/*.browser.spec.ts', 'tests/**/*.browser.spec.ts'],
    exclude: ['**/node_modules/**'],
    fileParallelism: false,
    testTimeout: 180_000,
  },
});
