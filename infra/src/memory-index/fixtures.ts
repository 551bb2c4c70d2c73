import { RECALLABLE_STATUSES, type HybridQuery, type IndexedMemory, type MemoryIndex } from '@elma/domain';
import { makeRecord, type RecordOverrides } from '@elma/domain/testing';
import { HashingEmbedder } from '../embedder/hashing';
import { cosine } from './sqlite/vectors';

export type { RecordOverrides };
/** For the property specs' arbitraries (`arbitraries.testing.ts`), which the layering rule keeps off `@elma/domain/testing`. */
export { makeRecord };

const embedder = new HashingEmbedder();

/** A record with its hashing-embedder vector (384 dimensions). */
export function indexed(overrides: RecordOverrides = {}): IndexedMemory {
  const record = makeRecord(overrides);
  return { record, vector: embedder.embedOne(record.content.text) };
}

export function embed(text: string): Float32Array {
  return embedder.embedOne(text);
}

/**
 * Whether a vector an index gave back is the one it was given: same length,
 * same direction. An index may store it quantised (the embedded one keeps
 * int8 components and a scale), so the components need not be equal.
 */
export function sameVector(returned: Float32Array | undefined, given: Float32Array): boolean {
  return returned !== undefined && returned.length === given.length && cosine(returned, given) > 0.999;
}

/** Ids of the hits of an open query in one tenant (both routes when a vector is given). */
export function searchIds(index: MemoryIndex, tenant: string, text: string, vector?: Float32Array): Promise<string[]> {
  return index
    .search({
      tenant,
      text,
      vector,
      limit: 10,
      filter: { statuses: RECALLABLE_STATUSES, maxSensitivity: 'restricted', now: '2025-01-01T00:00:00.000Z' },
    } satisfies HybridQuery)
    .then((hits) => hits.map((h) => h.record.id));
}
