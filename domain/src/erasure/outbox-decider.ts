import { z } from 'zod';
import type { Decider } from '../shared/decider';
import { ErasureReason } from './erasure';

/**
 * The erasure outbox `outbox-_system-erasures`: requests whose workflow has
 * not been seen started. Entries carry ids and the reason only.
 */
export const ErasureStart = z.object({ tenant: z.string(), requestId: z.string(), reason: ErasureReason });
/** One erasure whose workflow must be started: ids and the reason only (the scope stays sealed in its stream). */
export type ErasureStart = z.infer<typeof ErasureStart>;

const OutboxKey = z.object({ tenant: z.string(), requestId: z.string() });

export const ERASURE_OUTBOX_EVENT_TYPES = { queued: 'ErasureStartQueued', started: 'ErasureStarted' } as const;

export const ErasureOutboxEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ErasureStartQueued'), data: ErasureStart }),
  z.object({ type: z.literal('ErasureStarted'), data: OutboxKey }),
]);
export type ErasureOutboxEvent = z.infer<typeof ErasureOutboxEvent>;

/**
 * An entry that does not parse (an older writer's) is skipped rather than
 * failing the drain: a queued entry without valid ids and reason is never
 * started, a malformed started mark closes nothing.
 */
function parseOutboxEvent(event: { type: string; data: unknown }): ErasureOutboxEvent | undefined {
  const parsed = ErasureOutboxEvent.safeParse({ type: event.type, data: event.data });
  return parsed.success ? parsed.data : undefined;
}

export type ErasureOutboxCommand = { type: 'QueueStart'; entry: ErasureStart } | { type: 'MarkStarted'; tenant: string; requestId: string };

export interface ErasureOutboxState {
  /** Queued and not yet started, in queueing order, by `tenant/requestId`. */
  pending: ReadonlyMap<string, ErasureStart>;
}

export const initialErasureOutboxState = (): ErasureOutboxState => ({ pending: new Map() });

const keyOf = (tenant: string, requestId: string) => `${tenant}/${requestId}`;

/**
 * Queueing and marking are appends whose ids are deterministic per request,
 * so the log drops a repeat; nothing here depends on the state, which only
 * lists the pending entries.
 */
export function decideErasureOutbox(command: ErasureOutboxCommand, _state?: ErasureOutboxState): ErasureOutboxEvent[] {
  switch (command.type) {
    case 'QueueStart':
      return [{ type: 'ErasureStartQueued', data: { ...command.entry } }];
    case 'MarkStarted':
      return [{ type: 'ErasureStarted', data: { tenant: command.tenant, requestId: command.requestId } }];
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

export function evolveErasureOutbox(state: ErasureOutboxState, event: ErasureOutboxEvent): ErasureOutboxState {
  const pending = new Map(state.pending);
  if (event.type === 'ErasureStartQueued') pending.set(keyOf(event.data.tenant, event.data.requestId), event.data);
  else pending.delete(keyOf(event.data.tenant, event.data.requestId));
  return { pending };
}

export const erasureOutboxDecider: Decider<ErasureOutboxCommand, ErasureOutboxEvent, ErasureOutboxState> = {
  initialState: initialErasureOutboxState,
  evolve: evolveErasureOutbox,
  decide: decideErasureOutbox,
  parse: parseOutboxEvent,
};
