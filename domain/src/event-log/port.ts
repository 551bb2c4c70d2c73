/**
 * The event log port. It mirrors EventStoreDB's client semantics (revisions,
 * global positions, expected-revision checks, catch-up subscriptions with
 * server-side filters) so that the EventStoreDB adapter fits without changing
 * callers. The embedded adapter is SQLite.
 */

/** What a writer asserts about the stream before appending. */
export type ExpectedRevision = 'no_stream' | 'any' | 'stream_exists' | bigint;

/** An event to append. `id` is a UUID chosen by the caller; it makes retries idempotent. */
export interface EventData {
  id: string;
  type: string;
  data: unknown;
  metadata?: Record<string, unknown>;
}

/** An event as stored. `revision` counts within the stream from 0; `position` is global and strictly increasing. */
export interface RecordedEvent {
  streamId: string;
  id: string;
  type: string;
  revision: bigint;
  position: bigint;
  data: unknown;
  metadata: Record<string, unknown>;
  created: Date;
}

export interface AppendResult {
  /** The stream's revision after the append (the last event's revision). */
  nextExpectedRevision: bigint;
  /** Global position of the last event of the stream after the append. */
  position: bigint;
  /** True when every event id was already present at that place: nothing new was written. */
  duplicate: boolean;
}

export interface AppendRequest {
  stream: string;
  events: EventData[];
  expectedRevision: ExpectedRevision;
}

export type Direction = 'forwards' | 'backwards';

export interface ReadStreamOptions {
  direction?: Direction;
  /** Inclusive start revision; default the start (forwards) or the end (backwards). */
  fromRevision?: bigint | 'start' | 'end';
  maxCount?: number;
}

export interface EventFilter {
  /** Keep events whose stream name starts with one of these. */
  streamNamePrefix?: string[];
  /** Keep events whose type is one of these. */
  eventType?: string[];
}

export interface ReadAllOptions {
  direction?: Direction;
  /** Exclusive for `after`-style resumption: events with position > fromPosition are read forwards. Default: start. */
  fromPosition?: bigint | 'start' | 'end';
  maxCount?: number;
  filter?: EventFilter;
}

export interface SubscribeOptions {
  /** Resume after this global position (exclusive), e.g. a durable checkpoint; 'start' replays everything; 'end' only new events. */
  fromPosition: bigint | 'start' | 'end';
  filter?: EventFilter;
}

/**
 * A live catch-up subscription: first the history after `fromPosition`, then new
 * appends as they happen. Besides events it yields checkpoints: positions up to
 * which the (filtered) log has been scanned, so that a consumer of a sparse
 * filter can advance its durable checkpoint too.
 */
export interface Subscription extends AsyncIterable<SubscriptionItem> {
  unsubscribe(): Promise<void>;
}

export type SubscriptionItem = { kind: 'event'; event: RecordedEvent } | { kind: 'checkpoint'; position: bigint };

export interface EventLog {
  /**
   * Appends atomically: all events or none. A wrong expected revision throws
   * `WrongExpectedVersion` and writes nothing. Re-appending events whose ids are
   * already stored at that place in the stream is an idempotent no-op
   * (`duplicate: true`). Appending to a hard-deleted stream throws `StreamDeleted`.
   */
  append(stream: string, events: EventData[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult>;

  /**
   * Appends to several streams in one atomic unit: if any request fails its
   * expected revision, nothing of any request is written. Within a request,
   * events whose ids are already stored in that stream are skipped (idempotent retry).
   */
  appendMany(requests: AppendRequest[]): Promise<AppendResult[]>;

  /** Reads one stream in revision order. A missing or deleted stream reads as empty. */
  readStream(stream: string, options?: ReadStreamOptions): AsyncIterable<RecordedEvent>;

  /** Reads the whole log in global position order, optionally filtered. */
  readAll(options?: ReadAllOptions): AsyncIterable<RecordedEvent>;

  /** Catch-up subscription to the whole log with a server-side filter. */
  subscribeToAll(options: SubscribeOptions): Subscription;

  /**
   * Hard-deletes a stream: its events are physically removed (not just hidden)
   * and the name cannot be reused. Idempotent.
   */
  deleteStream(stream: string): Promise<void>;

  /**
   * Hard-deletes every named stream, as `deleteStream` does each one. Lets a
   * log finish its physical removal once for the batch (SQLite truncates its
   * WAL once, not once per stream). Idempotent; a failure may leave some of
   * the streams deleted, and a retry deletes the rest.
   */
  deleteStreams(streams: readonly string[]): Promise<void>;

  /** Global position of the newest event, or -1n for an empty log. */
  headPosition(): Promise<bigint>;

  close(): Promise<void>;
}
