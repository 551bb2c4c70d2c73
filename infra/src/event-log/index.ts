// The contract suite imports vitest, so it is not re-exported here; adapters' specs import '../contract'.
export { SqliteEventLog, type LayoutFile, type SqliteEventLogOptions } from './sqlite/sqlite-event-log';
export * from './eventstoredb';
