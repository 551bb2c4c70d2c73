import type { IndexedMemory } from '@elma/domain';
import { makeRecord, type RecordOverrides } from '@elma/domain/testing';
import { HashingEmbedder } from '../embedder/hashing';

export type { RecordOverrides };

const embedder = new HashingEmbedder();

/** A record with its hashing-embedder vector (384 dimensions). */
export function indexed(overrides: RecordOverrides = {}): IndexedMemory {
  const record = makeRecord(overrides);
  return { record, vector: embedder.embedOne(record.content.text) };
}

export function embed(text: string): Float32Array {
  return embedder.embedOne(text);
}
