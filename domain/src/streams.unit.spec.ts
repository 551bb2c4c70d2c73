import { describe, expect, it } from 'vitest';
import { auditStream } from './audit/audit';
import { parseStreamName, streams } from './streams';

// Stream names are stored in every data folder and EventStoreDB: a change here orphans existing streams.
describe('stream names', () => {
  it('are the names data folders already hold', () => {
    expect(streams.events('acme', 'psn_0')).toBe('events-acme-psn_0');
    expect(streams.memory('acme', 'm1')).toBe('memory-acme-m1');
    expect(streams.erasure('acme', 'r1')).toBe('erasure-acme-r1');
    expect(streams.tombstones('acme')).toBe('tombstone-acme');
    expect(streams.idempotency('acme', 'e1')).toBe('idempotency-acme-e1');
    expect(streams.audit('acme')).toBe('audit-acme');
    expect(auditStream('acme')).toBe('audit-acme');
    expect(streams.policy('acme')).toBe('policy-acme');
    expect(streams.legalHolds('acme')).toBe('legalholds-acme');
    expect(streams.reviews('acme')).toBe('reviews-acme');
    expect(streams.erasureOutbox).toBe('outbox-_system-erasures');
    expect(streams.migrations).toBe('migrations-elma');
    expect(streams.categories).toEqual({ events: 'events-', memory: 'memory-', erasure: 'erasure-', legacyLegalHolds: 'legalhold-' });
  });

  it('each category prefix starts the names of its streams', () => {
    expect(streams.events('acme', 'psn_0').startsWith(streams.categories.events)).toBe(true);
    expect(streams.memory('acme', 'm1').startsWith(streams.categories.memory)).toBe(true);
    expect(streams.erasure('acme', 'r1').startsWith(streams.categories.erasure)).toBe(true);
    expect(parseStreamName(streams.erasureOutbox)).toEqual({ category: 'outbox', tenant: '_system', id: 'erasures' });
  });
});
