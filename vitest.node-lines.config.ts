import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';
import { EMBEDDED_ENGINE_SUITE_FILES } from './scripts/engine-suites.ts';

/**
 * `npm run test:node-lines` (scripts/test-node-lines.sh), under each supported Node line: the unit suites and the
 * embedded engines' contract suites. They need no Temporal server, model or OpenBao, so the only global setup
 * says which Node runs them and checks that the SQLite binding loads in it.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      '{domain,shared,infra,application,activities,workflows,apps/*,clients/typescript}/src/**/*.unit.spec.ts',
      'tests/**/*.unit.spec.ts',
      ...EMBEDDED_ENGINE_SUITE_FILES,
    ],
    globalSetup: ['./tests/node-line.global-setup.ts'],
  },
});
