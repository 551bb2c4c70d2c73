import type { z } from 'zod';

/** An event of a stream as the decider sees it: the stored type and payload, nothing of the log's bookkeeping. */
export interface StreamEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
}

/**
 * The command side of one event-sourced stream: what the stream remembers
 * (`evolve` folded over its events from `initialState`), what a command
 * produces given that (`decide`, which throws the stream's domain errors),
 * and how a stored event is read back (`parse`). Pure: no I/O, no clock, no ids.
 */
export interface Decider<Command, Event extends StreamEvent, State> {
  initialState(): State;
  evolve(state: State, event: Event): State;
  decide(command: Command, state: State): Event[];
  /**
   * A stored event as this stream's event; throws (zod) when a known type
   * carries a malformed payload, and gives undefined for a type the stream
   * does not know (older writers' bookkeeping), which folding skips.
   */
  parse(event: StreamEvent): Event | undefined;
}

/**
 * A `parse` from a zod union of `{ type, data }` objects: unknown types are
 * skipped, known ones must match their schema.
 */
export function eventParser<S extends z.ZodType<StreamEvent>>(
  schema: S,
  types: readonly string[],
): (event: StreamEvent) => z.infer<S> | undefined {
  const known = new Set(types);
  return (event) => (known.has(event.type) ? schema.parse({ type: event.type, data: event.data }) : undefined);
}

/** Folds events over a decider's initial state. */
export function fold<Event extends StreamEvent, State>(
  decider: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>,
  events: Iterable<Event>,
): State {
  let state = decider.initialState();
  for (const event of events) state = decider.evolve(state, event);
  return state;
}
