import { WrongExpectedVersion, type Decider, type EventData, type EventLog, type StreamEvent } from '@elma/domain';

/** A stream folded: its state and the revision of its last event (-1n for an empty stream). */
export interface Folded<State> {
  state: State;
  revision: bigint;
}

/** Reads a stream once and folds it with the decider; events of types the stream does not know are skipped. */
export async function foldStream<Event extends StreamEvent, State>(
  log: EventLog,
  stream: string,
  decider: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve' | 'parse'>,
  from: Folded<State> = { state: decider.initialState(), revision: -1n },
): Promise<Folded<State>> {
  let { state, revision } = from;
  for await (const recorded of log.readStream(stream, revision < 0n ? {} : { fromRevision: revision + 1n })) {
    const event = decider.parse(recorded);
    if (event) state = decider.evolve(state, event);
    revision = recorded.revision;
  }
  return { state, revision };
}

export interface HandleCommandOptions<Event, State> {
  /** The stored form of a new event: its id (deterministic where a retried command must write nothing twice) and metadata. */
  toEventData(event: Event, index: number): EventData | Promise<EventData>;
  /**
   * The stream as the caller already folded it (read once for a whole step):
   * the first attempt decides on it instead of reading again. A conflict
   * means it was stale; the retry reads the stream.
   */
  from?: Folded<State>;
  /** Attempts in all, counting the first; 1 lets a conflict through to the caller. Default 5. */
  maxAttempts?: number;
}

export interface HandledCommand<Event, State> extends Folded<State> {
  /** What the command recorded (empty: nothing new, it was already recorded). */
  events: Event[];
}

/**
 * The one command path of an event-sourced stream: read and fold, decide,
 * append with the revision decided on. When another writer appended in
 * between (`WrongExpectedVersion`), the stream is read again and the command
 * decided afresh, up to `maxAttempts` times. Domain errors from `decide` go
 * to the caller as they are. Returns the stream's state after the command.
 */
export async function handleCommand<Command, Event extends StreamEvent, State>(
  log: EventLog,
  stream: string,
  decider: Decider<Command, Event, State>,
  command: Command,
  options: HandleCommandOptions<Event, State>,
): Promise<HandledCommand<Event, State>> {
  const maxAttempts = options.maxAttempts ?? 5;
  let folded = options.from ?? (await foldStream(log, stream, decider));
  for (let attempt = 1; ; attempt++) {
    const events = decider.decide(command, folded.state);
    if (events.length === 0) return { ...folded, events };
    const data = await Promise.all(events.map((event, i) => options.toEventData(event, i)));
    try {
      const result = await log.append(stream, data, { expectedRevision: folded.revision < 0n ? 'no_stream' : folded.revision });
      // The same event ids were already there (a retry of a command that did land): nothing new, and the state given was stale.
      if (result.duplicate) return { ...(await foldStream(log, stream, decider)), events: [] };
      const state = events.reduce((s, e) => decider.evolve(s, e), folded.state);
      return { state, revision: result.nextExpectedRevision, events };
    } catch (error) {
      if (!(error instanceof WrongExpectedVersion) || attempt >= maxAttempts) throw error;
      folded = await foldStream(log, stream, decider);
    }
  }
}
