export { EventStoreDbEventLog, type EventStoreDbEventLogOptions } from './eventstoredb-event-log';
export { EventStoreDbCheckpointStore } from './checkpoint-store';
export { EventStoreDbScavenger } from './scavenge';
