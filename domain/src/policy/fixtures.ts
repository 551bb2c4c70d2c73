import { MemoryRecord } from '../memory/record';

export interface RecordOverrides extends Partial<Omit<MemoryRecord, 'policy'>> {
  policy?: Partial<MemoryRecord['policy']>;
}

/** A valid active semantic memory for policy tests; override only what the test is about. */
export function makeRecord(overrides: RecordOverrides = {}): MemoryRecord {
  const { policy, ...rest } = overrides;
  return MemoryRecord.parse({
    id: 'mem-1',
    tenant: 'tenant-a',
    subject: 'u1',
    kind: 'semantic',
    content: { text: 'The customer prefers email.' },
    validFrom: '2024-01-01T00:00:00.000Z',
    validTo: null,
    recordedAt: '2024-01-01T00:00:00.000Z',
    provenance: { sourceEventIds: ['evt-1'], parentIds: [], rule: 'test', ruleVersion: '1' },
    confidence: 0.9,
    sourceTrust: 'user',
    tainted: false,
    usage: { retrieved: 0, adopted: 0, lastUsedAt: null },
    version: 1,
    status: 'active',
    retention: { class: 'standard', expiresAt: null },
    ...rest,
    policy: { owner: 'u1', roles: [], purposes: ['support'], sensitivity: 'internal', ...policy },
  });
}
