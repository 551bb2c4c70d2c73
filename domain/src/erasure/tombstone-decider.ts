import { z } from 'zod';
import { eventParser, type Decider } from '../shared/decider';

/**
 * Re-derivation tombstones of a tenant, `tombstone-{tenant}`: keyed
 * fingerprints of erased content, one `TombstonesWritten` per erasure request.
 */
export const TOMBSTONES_WRITTEN = 'TombstonesWritten';

export const TombstoneEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal(TOMBSTONES_WRITTEN), data: z.object({ requestId: z.string(), fingerprints: z.array(z.string()) }) }),
]);
export type TombstoneEvent = z.infer<typeof TombstoneEvent>;

export type TombstoneCommand = { type: 'WriteTombstones'; requestId: string; fingerprints: string[] };

/**
 * What a write decides on: the requests already written (each writes once).
 * The fingerprints themselves are a read model of the same events (the
 * tombstone check keeps them), not decision state.
 */
export interface TombstoneState {
  requests: ReadonlySet<string>;
}

export const initialTombstoneState = (): TombstoneState => ({ requests: new Set() });

/** Once per erasure request, deduplicated and sorted; nothing for an empty list or a request already written. */
export function decideTombstones(command: TombstoneCommand, state: TombstoneState): TombstoneEvent[] {
  if (command.fingerprints.length === 0 || state.requests.has(command.requestId)) return [];
  return [{ type: TOMBSTONES_WRITTEN, data: { requestId: command.requestId, fingerprints: [...new Set(command.fingerprints)].sort() } }];
}

export function evolveTombstones(state: TombstoneState, event: TombstoneEvent): TombstoneState {
  return state.requests.has(event.data.requestId) ? state : { requests: new Set([...state.requests, event.data.requestId]) };
}

export const tombstoneDecider: Decider<TombstoneCommand, TombstoneEvent, TombstoneState> = {
  initialState: initialTombstoneState,
  evolve: evolveTombstones,
  decide: decideTombstones,
  parse: eventParser(TombstoneEvent, [TOMBSTONES_WRITTEN]),
};
