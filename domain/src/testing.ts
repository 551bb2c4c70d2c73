/**
 * Test fixtures shared by the domain's tests and the adapters' contract
 * suites (`@elma/domain/testing`); never imported by production code.
 */
import { MemoryRecord } from './memory/record';

export interface RecordOverrides extends Partial<Omit<MemoryRecord, 'policy' | 'retention' | 'content'>> {
  text?: string;
  policy?: Partial<MemoryRecord['policy']>;
  retention?: Partial<MemoryRecord['retention']>;
}

/** A valid active semantic memory for tests; override only what the test is about. */
export function makeRecord(overrides: RecordOverrides = {}): MemoryRecord {
  const { text, policy, retention, ...rest } = overrides;
  return MemoryRecord.parse({
    id: 'mem-1',
    tenant: 'tenant-a',
    subject: 'user-1',
    kind: 'semantic',
    content: { text: text ?? 'The customer prefers email.' },
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
    ...rest,
    policy: { owner: 'user-1', roles: [], purposes: ['support'], sensitivity: 'internal', ...policy },
    retention: { class: 'standard', expiresAt: null, ...retention },
  });
}
