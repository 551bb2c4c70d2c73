import { describe, expect, it } from 'vitest';
import { EventAlreadyRecorded, writtenIdentity } from './idempotency';
import { makeIngested as event } from '../testing';

describe('what an idempotency key stands for', () => {
  it('is the same for a retry recorded later, by another agent, with keys in another order', () => {
    const retry = event({
      recordedAt: '2026-11-21T00:00:00Z',
      expiresAt: '2027-11-21T00:00:00Z',
      actor: 'agent-2',
      source: { channel: 'chat', system: 'crm' },
    });
    expect(writtenIdentity(retry)).toBe(writtenIdentity(event()));
  });

  it('differs for another subject, other content, other purposes or another project', () => {
    const base = writtenIdentity(event());
    for (const other of [
      event({ subject: 'cust-2' }),
      event({ content: { text: 'Ann prefers coffee' } }),
      event({ purposes: ['marketing'] }),
      event({ project: 'apollo' }),
      event({ occurredAt: '2026-11-20T10:00:01Z' }),
    ]) {
      expect(writtenIdentity(other)).not.toBe(base);
    }
  });

  it('a reused key is refused with a stable code that names only the path', () => {
    const error = new EventAlreadyRecorded('events.3.idempotencyKey');
    expect(error.code).toBe('MEMORY.ALREADY_RECORDED');
    expect(error.details).toEqual({ path: 'events.3.idempotencyKey' });
  });
});
