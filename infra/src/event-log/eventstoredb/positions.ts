import type { EventFilter } from '@elma/domain';

/** EventStoreDB's position of a record in the transaction log ($all). */
export interface LogPosition {
  commit: bigint;
  prepare: bigint;
}

const U64 = 1n << 64n;

/**
 * The port's global position is one bigint; EventStoreDB orders $all by the
 * pair (commit, prepare). Packing the pair as `commit * 2^64 + prepare` keeps
 * that order exactly, whatever the server does with the two halves (equal for
 * ordinary appends; a checkpoint may carry prepare 0), so a position can be
 * compared, stored and turned back into the pair the server expects.
 */
export function packPosition({ commit, prepare }: LogPosition): bigint {
  if (commit < 0n || prepare < 0n || commit >= U64 || prepare >= U64) throw new RangeError('log position out of range');
  return commit * U64 + prepare;
}

export function unpackPosition(position: bigint): LogPosition {
  if (position < 0n) throw new RangeError('no log position before the start');
  return { commit: position / U64, prepare: position % U64 };
}

/** Stream names of the adapter's own bookkeeping (checkpoints), never part of the application's log. */
export const CHECKPOINT_STREAM_PREFIX = 'elma-checkpoint-';

/** System streams ($...) and ELMA's checkpoint streams are invisible through the port. */
export function isInternalStream(stream: string, namespace: string): boolean {
  if (stream.startsWith('$')) return true;
  if (!stream.startsWith(namespace)) return true;
  return stream.startsWith(CHECKPOINT_STREAM_PREFIX, namespace.length);
}

/**
 * The server-side part of a port filter. EventStoreDB filters on stream name
 * or on event type, not both: a stream prefix filter is sent when there is one
 * (the namespace counts as one), otherwise an exact event-type regex, otherwise
 * only system events are excluded. Whatever the server cannot check is checked
 * again by `matchesFilter` on the client.
 */
export type ServerFilter =
  { on: 'streamName'; prefixes: string[] } | { on: 'eventType'; regex: string } | { on: 'streamName'; regex: string };

export function serverFilter(filter: EventFilter | undefined, namespace: string): ServerFilter {
  const prefixes = filter?.streamNamePrefix ?? [];
  if (prefixes.length > 0) return { on: 'streamName', prefixes: prefixes.map((p) => namespace + p) };
  if (namespace) return { on: 'streamName', prefixes: [namespace] };
  const types = filter?.eventType ?? [];
  if (types.length > 0) return { on: 'eventType', regex: `^(?:${types.map(escapeRegex).join('|')})$` };
  return { on: 'streamName', regex: '^[^$]' };
}

/** The whole port filter on one stored event (stream name as the port sees it, namespace removed). */
export function matchesFilter(filter: EventFilter | undefined, stream: string, type: string): boolean {
  const prefixes = filter?.streamNamePrefix ?? [];
  const types = filter?.eventType ?? [];
  if (prefixes.length > 0 && !prefixes.some((p) => stream.startsWith(p))) return false;
  if (types.length > 0 && !types.includes(type)) return false;
  return true;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Whether an idle subscription may report a checkpoint at `head`: only when
 * the log holds no event after `acknowledged` (the last position the consumer
 * was given) up to `head` that the filter keeps, since such an event is still
 * on its way and a checkpoint past it would let a consumer skip it. `firstKept`
 * is the position of the first kept event after `acknowledged`, if any.
 */
export function idleCheckpoint(acknowledged: bigint, head: bigint, firstKept: bigint | undefined): bigint | undefined {
  if (head <= acknowledged) return undefined;
  if (firstKept !== undefined && firstKept <= head) return undefined;
  return head;
}

/** Connection-level failures after which an idempotent call may be repeated as it was. */
export function isTransient(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return type === 'unavailable' || type === 'deadline-exceeded' || type === 'not-leader' || type === 'cancelled';
}
