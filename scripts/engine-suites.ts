/**
 * The engine contract suites: which file tests which port on which engine. `npm run test:engines` runs them
 * (scripts/test-engines.ts); `npm run test:node-lines` runs the embedded engines' ones under each Node line
 * (vitest.node-lines.config.ts).
 */
export interface EngineSuite {
  engine: string;
  port: string;
  file: string;
  /** The variable that points the suite at a server; absent for embedded engines, which always run. */
  variable?: string;
  /** Only the tests whose full name contains this, when one file holds the suite of several engines. */
  match?: string;
}

export const ENGINE_SUITES: EngineSuite[] = [
  { engine: 'SQLite (embedded)', port: 'EventLog', file: 'infra/src/event-log/sqlite/sqlite-event-log.int.spec.ts' },
  {
    engine: 'EventStoreDB',
    port: 'EventLog',
    file: 'infra/src/event-log/eventstoredb/eventstoredb-event-log.int.spec.ts',
    variable: 'ELMA_EVENTSTORE_URL',
  },
  { engine: 'SQLite (embedded)', port: 'MemoryIndex', file: 'infra/src/memory-index/sqlite/sqlite-memory-index.int.spec.ts' },
  {
    engine: 'Elasticsearch',
    port: 'MemoryIndex',
    file: 'infra/src/memory-index/elasticsearch/elasticsearch-memory-index.int.spec.ts',
    variable: 'ELMA_ELASTICSEARCH_URL',
  },
  {
    engine: 'Elasticsearch',
    port: 'Views rebuild',
    file: 'application/src/views/tenant-views.int.spec.ts',
    variable: 'ELMA_ELASTICSEARCH_URL',
  },
  {
    engine: 'Elasticsearch',
    port: 'Format versions',
    file: 'apps/worker/src/format-rebuilds.elasticsearch.int.spec.ts',
    variable: 'ELMA_ELASTICSEARCH_URL',
  },
  { engine: 'SQLite (embedded)', port: 'KeyVault', file: 'infra/src/key-vault/sqlite/sqlite-key-vault.int.spec.ts' },
  {
    engine: 'SQLite (embedded)',
    port: 'Ingest identity',
    file: 'application/src/ingest/ingest-service.int.spec.ts',
    match: 'ingest identity on SQLite',
  },
  {
    engine: 'EventStoreDB',
    port: 'Ingest identity',
    file: 'application/src/ingest/ingest-service.int.spec.ts',
    match: 'ingest identity on EventStoreDB',
    variable: 'ELMA_EVENTSTORE_URL',
  },
];

/** The files of the embedded engines' suites, which need no server: they always run. */
export const EMBEDDED_ENGINE_SUITE_FILES = [...new Set(ENGINE_SUITES.filter((s) => !s.variable).map((s) => s.file))];
