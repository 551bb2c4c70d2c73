import { DomainError, WrongExpectedVersion } from '../shared/errors';
import type { EventData, ExpectedRevision } from './port';

/** The revision of a stream that does not exist yet. */
export const NO_STREAM = -1n;

/** Where an event id is already stored in the stream. */
export interface StoredRef {
  revision: bigint;
  position: bigint;
}

/** What an adapter must do for one append request. */
export type AppendPlan = { kind: 'write'; events: EventData[] } | { kind: 'duplicate'; revision: bigint; position: bigint };

/**
 * Decides an append the same way for every adapter. `current` is the stream's
 * last revision (NO_STREAM when it does not exist); `stored[i]` says where
 * `events[i]`'s id already sits in the stream, if anywhere. An append whose
 * ids are all new must meet its expectation. Some ids already stored mean a
 * retry: with an exact expectation the stored events must sit exactly where
 * that expectation put them, otherwise the retry would land somewhere the
 * writer never decided on. Throws `WrongExpectedVersion` or a duplicate-id error.
 */
export function planAppend(
  stream: string,
  events: EventData[],
  expected: ExpectedRevision,
  current: bigint,
  stored: (StoredRef | undefined)[],
): AppendPlan {
  const ids = new Set<string>();
  for (const event of events) {
    if (ids.has(event.id)) throw duplicateId(stream, event.id);
    ids.add(event.id);
  }
  const storedCount = stored.reduce((n, ref) => (ref ? n + 1 : n), 0);
  if (storedCount === 0) {
    if (!revisionMatches(expected, current)) throw wrongVersion(stream, expected, current);
    return { kind: 'write', events };
  }

  let fresh: EventData[];
  if (expected === 'any' || expected === 'stream_exists') {
    fresh = events.filter((_, i) => !stored[i]);
  } else {
    const base = expected === 'no_stream' ? NO_STREAM : expected;
    const inPlace = stored.every((ref, i) => (i < storedCount ? ref?.revision === base + BigInt(i) + 1n : ref === undefined));
    const nothingSince = storedCount === events.length || current === base + BigInt(storedCount);
    if (!inPlace || !nothingSince) throw wrongVersion(stream, expected, current);
    fresh = events.slice(storedCount);
  }
  if (fresh.length > 0) return { kind: 'write', events: fresh };
  const newest = (stored as StoredRef[]).reduce((a, b) => (b.revision > a.revision ? b : a));
  return { kind: 'duplicate', revision: newest.revision, position: newest.position };
}

export function revisionMatches(expected: ExpectedRevision, current: bigint): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return current === NO_STREAM;
    case 'stream_exists':
      return current !== NO_STREAM;
    default:
      return current === expected;
  }
}

export function wrongVersion(stream: string, expected: ExpectedRevision, current: bigint): WrongExpectedVersion {
  return new WrongExpectedVersion(stream, String(expected), current === NO_STREAM ? 'no_stream' : String(current));
}

function duplicateId(stream: string, id: string): DomainError {
  return new DomainError('EVENT_LOG.DUPLICATE_EVENT_ID', `event id ${id} appears twice in one append to ${stream}`, {
    stream,
    eventId: id,
  });
}
