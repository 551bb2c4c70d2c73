export { SqliteMemoryIndex, type SqliteMemoryIndexOptions } from './sqlite/sqlite-memory-index';
export { DEFAULT_EXPANSION_ADD, DEFAULT_EXPANSION_SEARCH, type VectorGraphOptions } from './sqlite/vector-graph';
export { measureGraphRecall, type GraphRecall } from './sqlite/graph-recall';
export { ElasticsearchMemoryIndex, type ElasticsearchMemoryIndexOptions } from './elasticsearch/elasticsearch-memory-index';
export { ThreadedMemoryIndex, IndexThreadExited } from './thread/threaded-memory-index';
