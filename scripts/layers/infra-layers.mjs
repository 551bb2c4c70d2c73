// What each file of infra/src is, and where the split into layer packages would put it.
// One source for scripts/layers/wrong-imports.ts (the report) and for the
// interim folder rule in eslint.config.mjs. Delete this file once infra/ holds
// adapters only and the Nx tags say the same thing.
//
// kinds:
//   adapter     I/O to an engine or the OS (SQLite, EventStoreDB, Elasticsearch, usearch, Temporal, files, HTTP)
//   application a use case or a store that works through ports (no engine of its own)
//   shared      a helper that adapters and use cases both need (ids, tokens, logging, crypto primitives, errors)
//   root        composition root / start-up (wires adapters into use cases)
//   test        contract suites, fixtures, child processes for tests
//
// Rules (an import from a file of kind K may target): see ALLOWED.

/** @type {Array<[prefix: string, kind: string, target: string]>} first match wins */
export const INFRA_FILES = [
  // test support first: it may import anything
  ['infra/src/event-log/contract.ts', 'test', 'infra/src/event-log/contract.ts (stays)'],
  ['infra/src/key-vault/contract.ts', 'test', 'infra/src/key-vault/contract.ts (stays)'],
  ['infra/src/memory-index/contract.ts', 'test', 'infra/src/memory-index/contract.ts (stays)'],
  ['infra/src/memory-index/fixtures.ts', 'test', '(stays)'],
  ['infra/src/memory-index/arbitraries.testing.ts', 'test', '(stays)'],
  ['infra/src/memory-index/elasticsearch/dsl-eval.testing.ts', 'test', '(stays)'],
  ['infra/src/memory-index/sqlite/scratch.testing.ts', 'test', '(stays)'],
  ['infra/src/memory-index/sqlite/testing/', 'test', '(stays)'],
  ['infra/src/projection/testing/', 'test', 'application/src/views/testing/'],
  ['infra/src/runtime/testing/', 'test', 'apps/runtime/src/testing/'],
  ['infra/src/testing/', 'test', 'shared/src/testing/ (used by infra and application specs)'],

  // shared helpers: move down to @elma/shared (tag type:shared)
  ['infra/src/ingest/ids.ts', 'shared', 'shared/src/ids.ts'],
  ['infra/src/recall/token-counter.ts', 'shared', 'shared/src/token-counter.ts'],
  ['infra/src/runtime/logger.ts', 'shared', 'shared/src/logger.ts'],
  ['infra/src/storage/storage-full.ts', 'shared', 'shared/src/storage-full.ts'],
  ['infra/src/crypto/envelope.ts', 'shared', 'shared/src/crypto/envelope.ts (node:crypto primitives; used by key vault and sealing)'],
  ['infra/src/crypto/index.ts', 'shared', 'shared/src/crypto/index.ts'],
  ['infra/src/runtime/owner-only.ts', 'adapter', 'infra/src/files/owner-only.ts'],

  // adapters: stay in infra
  ['infra/src/event-log/', 'adapter', '(stays)'],
  ['infra/src/key-vault/', 'adapter', '(stays)'],
  ['infra/src/memory-index/', 'adapter', '(stays)'],
  ['infra/src/embedder/', 'adapter', '(stays)'],
  ['infra/src/certificate/', 'adapter', '(stays)'],
  ['infra/src/temporal/', 'adapter', '(stays)'],
  ['infra/src/config/', 'adapter', '(stays; or apps/runtime if config is parsed only by the root)'],
  ['infra/src/auth/', 'adapter', '(stays: JWT verification with jose)'],
  ['infra/src/storage/storage-health.ts', 'adapter', '(stays)'],
  ['infra/src/storage/index.ts', 'adapter', '(stays, re-exports shared storage-full until callers move)'],
  ['infra/src/runtime/data-dir-owner.ts', 'adapter', 'infra/src/files/data-dir-owner.ts'],
  ['infra/src/erasure/byte-scan-process.mjs', 'adapter', 'infra/src/raw-scan/byte-scan-process.mjs'],
  [
    'infra/src/erasure/byte-scan.ts',
    'adapter',
    'infra/src/raw-scan/byte-scan.ts (+ byte-scan-process.mjs), behind a RawStoreScan port for verification.ts',
  ],

  // use cases and stores over ports: move up to @elma/application (tag type:application)
  ['infra/src/ingest/', 'application', 'application/src/ingest/'],
  ['infra/src/memory/', 'application', 'application/src/memory/'],
  ['infra/src/recall/', 'application', 'application/src/recall/'],
  ['infra/src/erasure/', 'application', 'application/src/erasure/'],
  ['infra/src/governance/', 'application', 'application/src/governance/'],
  ['infra/src/consolidation/', 'application', 'application/src/consolidation/'],
  ['infra/src/projection/', 'application', 'application/src/views/'],
  ['infra/src/audit/', 'application', 'application/src/audit/ (a stream store over the EventLog port)'],
  ['infra/src/policy/', 'application', 'application/src/governance/policy-store.ts'],
  ['infra/src/legal-hold/', 'application', 'application/src/governance/legal-holds.ts'],
  ['infra/src/sealing/', 'application', 'application/src/sealing/ (KeyVault port + shared envelope)'],

  // composition root and start-up: move out to apps
  ['infra/src/runtime/elma.ts', 'root', 'apps/runtime/src/elma.ts (new @elma/runtime, tag type:app)'],
  ['infra/src/runtime/pseudonym-migration.ts', 'root', 'apps/runtime/src/pseudonym-migration.ts'],
  ['infra/src/index.ts', 'root', 'split: infra/src/index.ts (adapters) + application/src/index.ts + shared/src/index.ts'],
];

/** Which kinds a file of each kind may import (spec files are exempt, as in tests/layers.unit.spec.ts). */
export const ALLOWED = {
  shared: ['shared'],
  adapter: ['shared', 'adapter'],
  application: ['shared', 'application'],
  root: ['shared', 'adapter', 'application', 'root', 'test'],
  test: ['shared', 'adapter', 'application', 'root', 'test'],
};

/** @param {string} path repo-relative, forward slashes */
export function kindOf(path) {
  const hit = INFRA_FILES.find(([prefix]) => path === prefix || (prefix.endsWith('/') && path.startsWith(prefix)));
  return hit ? { kind: hit[1], target: hit[2] } : undefined;
}
