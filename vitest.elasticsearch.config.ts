import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * `npm run test:e2e:elasticsearch`: every API end-to-end suite with the
 * memory index on a real Elasticsearch node (ELMA_E2E_ELASTICSEARCH_URL,
 * required; each app gets a namespace of its own, see startTestApp), on the
 * run's Temporal dev server as in `npm test`. File paths after the command
 * narrow it to a subset, as with vitest.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['apps/api/src/**/*.e2e.spec.ts'],
    globalSetup: ['./tests/elasticsearch.global-setup.ts', ...(base.test?.globalSetup as string[])],
  },
});
