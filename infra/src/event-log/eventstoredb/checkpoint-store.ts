import { BACKWARDS, END, jsonEvent } from '@eventstore/db-client';
import type { CheckpointStore } from '@elma/domain';
import type { EventStoreDbEventLog } from './eventstoredb-event-log';
import { CHECKPOINT_STREAM_PREFIX } from './positions';

/** A checkpoint event as stored: the position as a decimal string, since JSON has no 128-bit integers. */
export interface CheckpointData {
  position: string;
}

export function encodeCheckpoint(position: bigint): CheckpointData {
  if (position < -1n) throw new RangeError('a checkpoint is a log position or -1');
  return { position: position.toString() };
}

export function decodeCheckpoint(data: unknown): bigint | undefined {
  const position = (data as Partial<CheckpointData> | null)?.position;
  if (typeof position !== 'string' || !/^-?\d+$/.test(position)) return undefined;
  const value = BigInt(position);
  return value >= -1n ? value : undefined;
}

/**
 * Projection checkpoints kept in the log itself, one stream per consumer
 * (`elma-checkpoint-{name}`) whose metadata keeps only the newest event. The
 * adapter hides these streams from reads and subscriptions, so saving a
 * checkpoint never wakes the consumer that saved it.
 */
export class EventStoreDbCheckpointStore implements CheckpointStore {
  private readonly limited = new Set<string>();

  constructor(private readonly log: EventStoreDbEventLog) {}

  async load(name: string): Promise<bigint | undefined> {
    try {
      for await (const resolved of this.log.client.readStream(this.stream(name), {
        direction: BACKWARDS,
        fromRevision: END,
        maxCount: 1,
      })) {
        return decodeCheckpoint(resolved.event?.data);
      }
    } catch (error) {
      if ((error as { type?: string }).type === 'stream-not-found') return undefined;
      throw error;
    }
    return undefined;
  }

  async save(name: string, position: bigint): Promise<void> {
    const stream = this.stream(name);
    if (!this.limited.has(stream)) {
      await this.log.client.setStreamMetadata(stream, { maxCount: 1 });
      this.limited.add(stream);
    }
    await this.log.client.appendToStream(stream, jsonEvent({ type: 'CheckpointSaved', data: { ...encodeCheckpoint(position) } }));
  }

  private stream(name: string): string {
    return this.log.name(CHECKPOINT_STREAM_PREFIX + name);
  }
}
