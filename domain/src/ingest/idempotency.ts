import { DomainError } from '../shared/errors';
import type { EventIngested } from './schema';

/**
 * The idempotency key of this event was already used in the tenant for a
 * different subject or different content. Names only the request path: the
 * other event's id, subject and content stay unknown to the caller.
 */
export class EventAlreadyRecorded extends DomainError {
  constructor(path: string) {
    super('MEMORY.ALREADY_RECORDED', `idempotencyKey already used for a different event (at ${path || '(root)'})`, { path });
  }
}

/**
 * What an event's idempotency key stands for: the subject and everything the
 * caller said about the event. A retry matches it exactly; the same key with
 * anything else here is a different event. Server-side times (recordedAt,
 * expiry) and the writing agent are not part of it, so a retry by another
 * process of the same agent is still a duplicate.
 */
export function writtenIdentity(event: EventIngested): string {
  return canonicalJson({
    subject: event.subject,
    occurredAt: event.occurredAt,
    activity: event.activity,
    content: event.content,
    source: event.source,
    sensitivity: event.sensitivity,
    purposes: event.purposes,
    retention: event.retention,
    project: event.project ?? null,
    // Absent for events written before sessions existed: their identity stays what it was.
    ...(event.session !== undefined ? { session: event.session } : {}),
  });
}

/** JSON with object keys sorted at every depth, so equal values give equal strings. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
