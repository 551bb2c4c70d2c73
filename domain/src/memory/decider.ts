import { DomainError } from '../shared/errors';
import type { MemoryCommand, MemoryEvent } from './events';
import type { MemoryRecord } from './record';

/** State of one memory stream: nothing yet, or the current record. */
export type MemoryState = { status: 'empty' } | { status: 'recorded'; record: MemoryRecord };

export const initialMemoryState = (): MemoryState => ({ status: 'empty' });

export class MemoryAlreadyRecorded extends DomainError {
  constructor(memoryId: string) {
    super('MEMORY.ALREADY_RECORDED', `memory ${memoryId} already exists with different content`, { memoryId });
  }
}

/**
 * Decides which events a command produces. Recording the same memory twice is
 * an idempotent no-op (no events); recording a different record under an
 * existing id is a conflict.
 */
export function decide(command: MemoryCommand, state: MemoryState): MemoryEvent[] {
  switch (command.type) {
    case 'RecordMemory': {
      if (state.status === 'recorded') {
        if (sameRecord(state.record, command.record)) return [];
        throw new MemoryAlreadyRecorded(command.record.id);
      }
      return [{ type: 'MemoryRecorded', record: command.record }];
    }
    default: {
      const _exhaustive: never = command.type;
      return _exhaustive;
    }
  }
}

export function evolve(state: MemoryState, event: MemoryEvent): MemoryState {
  switch (event.type) {
    case 'MemoryRecorded':
      return { status: 'recorded', record: event.record };
    default: {
      const _exhaustive: never = event.type;
      return _exhaustive;
    }
  }
}

/** The same memory means the same kind, content and sources; times of the attempt may differ on a retry. */
function sameRecord(a: MemoryRecord, b: MemoryRecord): boolean {
  const essence = (r: MemoryRecord) => JSON.stringify([r.kind, r.subject, r.content, r.provenance.sourceEventIds]);
  return essence(a) === essence(b);
}
