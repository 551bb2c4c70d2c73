// Lint configuration (ESLint flat config). Two jobs:
// 1. Layer boundaries between packages, read from the Nx project graph and the
//    `tags` in each project.json (@nx/enforce-module-boundaries).
// 2. typescript-eslint's recommended rules. Formatting is Prettier's job
//    (`npm run format:check`); eslint-config-prettier turns off the rules that
//    would fight it.
import js from '@eslint/js';
import globals from 'globals';
import nx from '@nx/eslint-plugin';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

/**
 * Which project (by tag) may import which. The tags live in each project.json.
 * Use cases (application) see adapters only through the ports in domain; the
 * composition root (apps/runtime) is the one place that wires both.
 */
const depConstraints = [
  { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:domain'] },
  { sourceTag: 'type:shared', onlyDependOnLibsWithTags: ['type:domain', 'type:shared'] },
  { sourceTag: 'type:infra', onlyDependOnLibsWithTags: ['type:domain', 'type:shared', 'type:infra'] },
  { sourceTag: 'type:application', onlyDependOnLibsWithTags: ['type:domain', 'type:shared', 'type:application'] },
  {
    sourceTag: 'type:activities',
    onlyDependOnLibsWithTags: ['type:domain', 'type:shared', 'type:application', 'type:activities'],
  },
  // Workflows run in Temporal's deterministic sandbox: the Temporal workflow
  // packages and, as types only (checked below), domain and activities.
  {
    sourceTag: 'type:workflow',
    onlyDependOnLibsWithTags: ['type:domain', 'type:activities', 'type:workflow'],
    allowedExternalImports: ['@temporalio/workflow', '@temporalio/common'],
  },
  { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['*'] },
  // The client SDK is used outside this repository: it stands alone, with nothing of the server in it.
  { sourceTag: 'type:client', onlyDependOnLibsWithTags: [] },
];

/** Files that wire things for tests; like tests/layers.unit.spec.ts, they may import across layers. */
const TEST_FILES = [
  '**/*.spec.ts',
  '**/*.testing.ts',
  '**/testing.ts',
  '**/testing/**',
  '**/contract.ts',
  '**/fixtures.ts',
  'tests/**',
  'scripts/**',
];

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', '**/dist/**', '**/.nx/**', '.tools/**', '.elma/**', 'coverage/**', 'tests/fixtures/**', '**/*.d.mts'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts', '**/*.mjs'],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': ['error', { depConstraints, allow: [] }],
      // `_exhaustive: never` and `_unused` parameters are the repo's idiom.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' }],
    },
  },
  {
    files: TEST_FILES,
    rules: { '@nx/enforce-module-boundaries': 'off' },
  },
  // Workflows: anything of ours only as a type (the sandbox must not load it).
  {
    files: ['workflows/src/**/*.ts'],
    ignores: TEST_FILES,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@elma/*'], allowTypeImports: true, message: 'Workflows import only types from our packages.' },
            { group: ['node:*'], message: 'Workflows run in the deterministic sandbox: no Node modules.' },
          ],
        },
      ],
    },
  },
  // TypeScript checks undefined names itself (typescript-eslint's advice).
  {
    files: ['**/*.ts', '**/*.mts'],
    rules: { 'no-undef': 'off' },
  },
  prettier,
);
