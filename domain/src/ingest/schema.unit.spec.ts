import { describe, expect, it } from 'vitest';
import { deriveMemories } from '../memory/derive';
import { writtenIdentity } from './idempotency';
import { EventIngested, IngestEventInput } from './schema';

const input = {
  subject: 'cust-1',
  occurredAt: '2026-11-20T10:00:00Z',
  activity: 'chat.turn',
  content: { text: 'Tilburg, since the move in March.' },
  source: { system: 'crm', channel: 'chat' },
};

describe('the ingest event’s conversation session', () => {
  it('is optional and bounded like a session id: 1 to 200 characters, no control characters', () => {
    expect(IngestEventInput.parse(input).session).toBeUndefined();
    expect(IngestEventInput.parse({ ...input, session: '会话-7' }).session).toBe('会话-7');
    for (const session of ['', 'x'.repeat(201), 'chat\n1']) expect(IngestEventInput.safeParse({ ...input, session }).success).toBe(false);
  });

  it('is carried into the episodic memory, and into the event’s identity only when given', () => {
    const event = EventIngested.parse({
      ...input,
      eventId: 'evt-1',
      tenant: 'acme',
      recordedAt: '2026-11-20T10:00:01Z',
      sensitivity: 'internal',
      purposes: ['support'],
      retention: 'standard',
      idempotencyKey: 'k-1',
      actor: 'agent-1',
    });
    const withSession = { ...event, session: 'chat-1' };
    const [episodic] = deriveMemories(withSession);
    expect(episodic.record).toMatchObject({ kind: 'episodic', session: 'chat-1' });
    expect(deriveMemories(event)[0].record).not.toHaveProperty('session');
    // An event written before sessions existed keeps the identity it had; a session makes it another event.
    expect(writtenIdentity(event)).not.toContain('session');
    expect(writtenIdentity(withSession)).not.toBe(writtenIdentity(event));
  });
});
