/**
 * Test fixtures shared by the domain's tests and the adapters' contract
 * suites (`@elma/domain/testing`); never imported by production code.
 */
import { ErasureCertificate } from './erasure/certificate';
import { ERASURE_STEPS } from './erasure/erasure';
import type { EventIngested } from './ingest/schema';
import { MemoryRecord, type MemoryKind } from './memory/record';
import { fold, type Decider, type StreamEvent } from './shared/decider';

/**
 * Given/when/then for a decider: `given(decider, ...events).when(command)`
 * folds the events and returns what the command decides (or throws the
 * decider's error), for `expect(...).toEqual(events)` / `.toThrow(Error)`.
 */
export function given<Command, Event extends StreamEvent, State>(decider: Decider<Command, Event, State>, ...events: Event[]) {
  return { when: (command: Command): Event[] => decider.decide(command, fold(decider, events)) };
}

export interface RecordOverrides extends Partial<Omit<MemoryRecord, 'policy' | 'retention' | 'content'>> {
  text?: string;
  /** The whole content (with a fact, say); `text` is ignored when given. */
  content?: MemoryRecord['content'];
  policy?: Partial<MemoryRecord['policy']>;
  retention?: Partial<MemoryRecord['retention']>;
}

/** A valid active semantic memory for tests; override only what the test is about. */
export function makeRecord(overrides: RecordOverrides = {}): MemoryRecord {
  const { text, content, policy, retention, ...rest } = overrides;
  return MemoryRecord.parse({
    id: 'mem-1',
    tenant: 'tenant-a',
    subject: 'user-1',
    kind: 'semantic',
    content: content ?? { text: text ?? 'The customer prefers email.' },
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

export interface CertificateOptions {
  keyId: string;
  records?: number;
  requestedBy?: string;
  passed?: boolean;
  /** List this many record ids in a `records` scope (default: a subject scope). */
  scopeIds?: number;
  contentFingerprint?: string;
  /** Version 2 fields: the issuing organisation and the staff's display names. */
  organisation?: string;
  requestedByName?: string;
  approvedBy?: string;
  approvedByName?: string;
}

/** A valid erasure certificate (unsigned) for tests of signing, rendering and verification. */
export function makeCertificate(options: CertificateOptions): ErasureCertificate {
  const { keyId, records = 3, requestedBy = 'dpo@acme.test', passed = true, scopeIds, contentFingerprint = 'ab'.repeat(32) } = options;
  const { organisation, requestedByName, approvedBy, approvedByName } = options;
  const kinds: MemoryKind[] = ['episodic', 'semantic', 'working'];
  const closureRecords = Array.from({ length: records }, (_, i) => ({
    id: `mem-${String(i).padStart(5, '0')}`,
    kind: kinds[i % kinds.length],
    contentFingerprint,
  }));
  const byKind = { working: 0, episodic: 0, semantic: 0, procedural: 0, relational: 0 };
  for (const r of closureRecords) byKind[r.kind]++;
  const probe = { checked: records, failed: passed ? 0 : 1, skipped: 0 };
  return ErasureCertificate.parse({
    type: 'elma.erasure-certificate',
    version: 2,
    ...(organisation ? { organisation } : {}),
    tenant: 'acme',
    requestId: 'er-2024-0001',
    request: {
      requestedBy,
      ...(requestedByName ? { requestedByName } : {}),
      requestedAt: '2024-05-01T09:00:00.000Z',
      reason: 'subject_request',
      scope:
        scopeIds === undefined
          ? { type: 'subject', subjectPseudonym: `psn_${'c'.repeat(32)}` }
          : { type: 'records', recordIds: closureRecords.slice(0, scopeIds).map((r) => r.id) },
      approvedBy: approvedBy ?? null,
      ...(approvedByName ? { approvedByName } : {}),
      approvedAt: approvedBy ? '2024-05-01T09:30:00.000Z' : null,
    },
    closure: { size: records, byKind, records: closureRecords, events: 12, streamsDeleted: 3, keysShredded: 1, tombstones: 3 },
    legalHoldExceptions: [{ recordId: 'mem-held', holdIds: ['hold-1', 'hold-2'] }],
    steps: ERASURE_STEPS.map((step) => ({
      step,
      startedAt: '2024-05-01T10:00:00.000Z',
      finishedAt: '2024-05-01T10:00:01.000Z',
      attempts: 1,
    })),
    verification: {
      passed,
      getById: probe,
      bm25: probe,
      knn: probe,
      decrypt: probe,
      byteScan: { ...probe, files: 4, bytes: 81920, paths: ['events.db', 'index.db'] },
      rounds: 1,
    },
    auditAnchor: { seq: 42, hash: 'd'.repeat(64) },
    issuedAt: '2024-05-01T10:01:00.000Z',
    keyId,
  });
}

/** An ingested event as the log stores it; override only what the test is about. */
export function makeIngested(overrides: Partial<EventIngested> = {}): EventIngested {
  return {
    eventId: '0b6c2f1e-1111-4222-8333-444455556666',
    tenant: 'acme',
    subject: 'cust-1',
    occurredAt: '2026-11-20T10:00:00.000Z',
    recordedAt: '2026-11-20T10:00:01.000Z',
    activity: 'chat.turn',
    content: { text: 'ACME moved its HQ to Berlin.' },
    source: { system: 'crm', channel: 'chat' },
    sensitivity: 'internal',
    purposes: ['support'],
    retention: 'standard',
    expiresAt: null,
    idempotencyKey: 'k1',
    actor: 'agent-1',
    ...overrides,
  };
}

/** A chat event as a client sends it to `POST /v1/events`; `extra` overrides any field. */
export const chatEvent = (subject: string, text: string, extra: Record<string, unknown> = {}) => ({
  subject,
  occurredAt: '2026-11-20T10:00:00Z',
  activity: 'chat.turn',
  content: { text },
  source: { system: 'crm', channel: 'chat' },
  purposes: ['support'],
  ...extra,
});
