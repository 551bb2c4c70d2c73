import { z } from 'zod';
import { MemoryRecord } from './record';

/** Event types of the `memory-{tenant}-{id}` streams. */
export const MemoryRecorded = z.object({ type: z.literal('MemoryRecorded'), record: MemoryRecord });
export type MemoryRecorded = z.infer<typeof MemoryRecorded>;

export type MemoryEvent = MemoryRecorded;

/** The command that records a memory. Time and id come from outside (see docs/architecture.md#conventions-the-code-keeps). */
export interface RecordMemory {
  type: 'RecordMemory';
  record: MemoryRecord;
}

export type MemoryCommand = RecordMemory;
