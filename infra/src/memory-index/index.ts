export { SqliteMemoryIndex, type SqliteMemoryIndexOptions } from './sqlite/sqlite-memory-index';
export type { VectorGraphOptions } from './sqlite/vector-graph';
export { ElasticsearchMemoryIndex, type ElasticsearchMemoryIndexOptions } from './elasticsearch/elasticsearch-memory-index';
