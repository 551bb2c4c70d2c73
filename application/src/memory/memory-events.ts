import { streams, type AppendRequest, type ExpectedRevision, type MemoryRecord } from '@elma/domain';
import { deterministicUuid } from '@elma/shared';
import type { EventSealer, KeyCaching } from '../sealing/sealed-events';

/** Metadata of a memory event, in clear, so the projection can skip what it already has without decrypting. */
export const MEMORY_ID = 'memoryId';
export const VERSION = 'version';

export function memoryEventMetadata(record: MemoryRecord): Record<string, unknown> {
  return { [MEMORY_ID]: record.id, [VERSION]: record.version };
}

/**
 * Each record as the `MemoryRecorded` event of its version, sealed under its
 * own data key, with a deterministic event id (the same version appended
 * again is a duplicate, not a second event), ready for one `appendMany`.
 */
export async function memoryVersionAppends(
  sealer: EventSealer,
  tenant: string,
  records: MemoryRecord[],
  options: { actor?: string; expected?: (index: number) => ExpectedRevision; metadata?: Record<string, unknown> } & KeyCaching = {},
): Promise<AppendRequest[]> {
  const sealed = await sealer.seal(
    tenant,
    records.map((record) => ({
      id: deterministicUuid('MemoryRecorded', tenant, record.id, String(record.version)),
      type: 'MemoryRecorded',
      keyId: record.id,
      data: { type: 'MemoryRecorded', record },
      metadata: { ...memoryEventMetadata(record), ...(options.actor ? { actor: options.actor } : {}), ...options.metadata },
    })),
    { keep: options.keep },
  );
  return records.map((record, i) => ({
    stream: streams.memory(tenant, record.id),
    events: [sealed[i]],
    expectedRevision: options.expected?.(i) ?? 'any',
  }));
}
