import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    alias: {
      '@elma/domain': here('./domain/src/index.ts'),
      '@elma/infra': here('./infra/src/index.ts'),
      '@elma/activities': here('./activities/src/index.ts'),
      '@elma/workflows': here('./workflows/src/index.ts'),
      '@elma/api': here('./apps/api/src/index.ts'),
      '@elma/worker': here('./apps/worker/src/index.ts'),
    },
  },
  test: {
    include: ['{domain,infra,activities,workflows,apps/*}/src/**/*.spec.ts', 'tests/**/*.spec.ts'],
    globalSetup: ['./tests/temporal.global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
