import { z } from 'zod';

/**
 * What became of the physical removal of deleted streams. SQLite removes rows
 * in place (`secure_delete`, WAL truncated) as part of the delete; EventStoreDB
 * keeps a tombstoned stream's events in its chunk files until a scavenge runs.
 * The erasure certificate carries this report either way.
 */
export const LogCompactionReport = z.strictObject({
  engine: z.string(),
  method: z.enum(['in_place', 'scavenge']),
  /** Whether a compaction was asked for after the deletions. */
  requested: z.boolean(),
  /** Whether the deleted events are known to be gone from the log's files. */
  completed: z.boolean(),
  /** The engine's id of the compaction run, when it has one. */
  id: z.string().optional(),
  /** The engine's word for the outcome (e.g. Success, Failed, running). */
  result: z.string().optional(),
});
export type LogCompactionReport = z.infer<typeof LogCompactionReport>;

/** The log's physical compaction, for engines whose hard delete is lazy. */
export interface LogCompaction {
  /** Asks for a compaction run now. */
  request(): Promise<void>;
  /** The first compaction run started at or after `since`, and whether it completed. */
  report(since: Date): Promise<LogCompactionReport>;
}

/** The report of a log that deletes in place: nothing to wait for. */
export const IN_PLACE_COMPACTION = (engine: string): LogCompactionReport => ({
  engine,
  method: 'in_place',
  requested: false,
  completed: true,
});
