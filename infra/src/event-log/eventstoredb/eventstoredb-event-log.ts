import {
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM as ESDB_NO_STREAM,
  START,
  jsonEvent,
  type AllStreamResolvedEvent,
  type ResolvedEvent,
} from '@eventstore/db-client';
import {
  NO_STREAM,
  StreamDeleted,
  WrongExpectedVersion,
  planAppend,
  wrongVersion,
  type AppendRequest,
  type AppendResult,
  type EventData,
  type EventLog,
  type ExpectedRevision,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StoredRef,
  type SubscribeOptions,
  type Subscription,
} from '@elma/domain';
import { isInternalStream, isTransient, matchesFilter, packPosition, unpackPosition } from './positions';
import { DeletedStreams } from './deleted-streams';
import { EventStoreDbSubscription } from './eventstoredb-subscription';

export interface EventStoreDbEventLogOptions {
  /** Connection string, e.g. `esdb://localhost:2113?tls=false`. */
  url: string;
  /**
   * Prefix added to every stream name and hidden again on the way out, so that
   * several ELMA deployments (or test cases) can share one cluster, each seeing
   * an empty log of its own. Default: none.
   */
  namespace?: string;
  /** How many times a call failing on the connection is repeated (appends are idempotent by event id). Default 5. */
  retries?: number;
  /** How often an idle live subscription checks whether it may report a checkpoint at the head. Default 200 ms. */
  idleCheckpointMs?: number;
}

/** How far back a retry looks for event ids already stored in a stream (EventStoreDB has no index by event id). */
const RETRY_WINDOW = 512;
const PAGE = 512;

/**
 * The production event log on EventStoreDB / KurrentDB. Revisions, expected
 * revisions and tombstones are the server's own; what the server does not do
 * the port's way is done here:
 *
 * - Idempotency: an append first reads where its ids would already be (the
 *   exact slot for an exact expectation, else the newest RETRY_WINDOW events)
 *   and the shared `planAppend` decides, so a retry reports `duplicate` and
 *   only new events are written. The write itself carries the exact revision
 *   that was read, so a concurrent writer makes it fail rather than interleave.
 * - `appendMany`: EventStoreDB appends to one stream atomically, not to
 *   several. Every request is checked before anything is written (a wrong
 *   expectation or a deleted stream writes nothing); then the streams are
 *   written in order. A writer racing in between can still make a later
 *   stream fail after an earlier one was written: retrying the batch with the
 *   same event ids then completes it without duplicates.
 * - Hard delete tombstones the stream. Its events stay in $all until the next
 *   scavenge (`requestScavenge`), so reads of $all skip tombstoned streams.
 * - Global positions pack EventStoreDB's (commit, prepare) pair into one bigint.
 */
export class EventStoreDbEventLog implements EventLog {
  /** Connects and checks that the server answers. */
  static async open(options: EventStoreDbEventLogOptions): Promise<EventStoreDbEventLog> {
    const log = new EventStoreDbEventLog(options);
    try {
      await log.headPosition();
    } catch (error) {
      await log.close();
      throw new Error(`EventStoreDB at ${redactUrl(options.url)} did not answer: ${(error as Error).message}`);
    }
    return log;
  }

  readonly client: EventStoreDBClient;
  readonly namespace: string;
  private readonly retries: number;
  private readonly idleCheckpointMs: number;
  private readonly subscriptions = new Set<EventStoreDbSubscription>();
  private closed = false;

  constructor(readonly options: EventStoreDbEventLogOptions) {
    this.client = EventStoreDBClient.connectionString(options.url);
    this.namespace = options.namespace ?? '';
    this.retries = options.retries ?? 5;
    this.idleCheckpointMs = options.idleCheckpointMs ?? 200;
  }

  async append(stream: string, events: EventData[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    const [result] = await this.appendMany([{ stream, events, expectedRevision: options.expectedRevision }]);
    return result;
  }

  appendMany(requests: AppendRequest[]): Promise<AppendResult[]> {
    return this.withRetry(async () => {
      // A subscription from 'end' fixes its start first, so it cannot miss this append.
      await Promise.all([...this.subscriptions].map((s) => s.ready.catch(() => undefined)));
      const plans = [];
      for (const request of requests) plans.push(await this.plan(request));
      const results: AppendResult[] = [];
      for (const { request, plan, current } of plans) {
        if (plan.kind === 'duplicate') {
          results.push({ nextExpectedRevision: plan.revision, position: plan.position, duplicate: true });
          continue;
        }
        results.push(await this.write(request.stream, plan.events, current, request.expectedRevision));
      }
      return results;
    });
  }

  async *readStream(stream: string, options: ReadStreamOptions = {}): AsyncIterable<RecordedEvent> {
    const backwards = options.direction === 'backwards';
    const from = options.fromRevision ?? (backwards ? 'end' : 'start');
    if (from === 'end' && !backwards) return;
    if (options.maxCount !== undefined && options.maxCount <= 0) return;
    const reading = this.client.readStream(this.name(stream), {
      direction: backwards ? BACKWARDS : FORWARDS,
      fromRevision: from === 'start' ? START : from === 'end' ? END : from,
      ...(options.maxCount !== undefined ? { maxCount: options.maxCount } : {}),
    });
    try {
      for await (const resolved of reading) {
        const event = this.toRecorded(resolved);
        if (event) yield event;
      }
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
  }

  async *readAll(options: ReadAllOptions = {}): AsyncIterable<RecordedEvent> {
    const backwards = options.direction === 'backwards';
    const given = options.fromPosition ?? (backwards ? 'end' : 'start');
    // -1 is "before the first event", as a fresh checkpoint says.
    const from = typeof given === 'bigint' && given < 0n ? 'start' : given;
    if ((from === 'start' && backwards) || (from === 'end' && !backwards)) return;
    let remaining = options.maxCount ?? Infinity;
    if (remaining <= 0) return;
    const after = typeof from === 'bigint' ? from : undefined;
    const deleted = new DeletedStreams(this);
    const reading = this.client.readAll({
      direction: backwards ? BACKWARDS : FORWARDS,
      fromPosition: from === 'start' ? START : from === 'end' ? END : unpackPosition(from),
    });
    for await (const resolved of reading) {
      const event = this.toRecorded(resolved);
      if (!event) continue;
      // EventStoreDB reads $all from a position inclusively; the port excludes it.
      if (after !== undefined && (backwards ? event.position >= after : event.position <= after)) continue;
      if (!matchesFilter(options.filter, event.streamId, event.type)) continue;
      if (await deleted.has(event.streamId)) continue;
      yield event;
      if (--remaining <= 0) return;
    }
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    const subscription = new EventStoreDbSubscription({
      log: this,
      from: options.fromPosition,
      filter: options.filter,
      idleCheckpointMs: this.idleCheckpointMs,
      onClose: (s) => this.subscriptions.delete(s),
    });
    this.subscriptions.add(subscription);
    return subscription;
  }

  async deleteStream(stream: string): Promise<void> {
    await this.withRetry(async () => {
      try {
        await this.client.tombstoneStream(this.name(stream));
      } catch (error) {
        if (errorType(error) !== 'stream-deleted') throw error;
      }
    });
  }

  /** EventStoreDB tombstones stream by stream; the scavenge that removes the events runs later, once for all. */
  async deleteStreams(streams: readonly string[]): Promise<void> {
    for (const stream of streams) await this.deleteStream(stream);
  }

  async headPosition(): Promise<bigint> {
    for await (const event of this.readAll({ direction: 'backwards', maxCount: 1 })) return event.position;
    return -1n;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const subscription of [...this.subscriptions]) await subscription.unsubscribe();
    await this.client.dispose();
  }

  /** The server's name of a port stream. */
  name(stream: string): string {
    return this.namespace + stream;
  }

  /** A stored event as the port sees it, or undefined for the server's and the adapter's own records. */
  toRecorded(resolved: ResolvedEvent | AllStreamResolvedEvent): RecordedEvent | undefined {
    const event = resolved.event;
    if (!event || event.type.startsWith('$') || isInternalStream(event.streamId, this.namespace)) return undefined;
    if (!event.position) throw new Error('EventStoreDB returned an event without its log position: ELMA needs EventStoreDB 22.6 or later');
    return {
      streamId: event.streamId.slice(this.namespace.length),
      id: event.id,
      type: event.type,
      revision: event.revision,
      position: packPosition(event.position),
      data: event.isJson ? event.data : null,
      metadata: (event.metadata as Record<string, unknown> | undefined) ?? {},
      created: new Date(event.created),
    };
  }

  /** Whether the stream has been tombstoned (hard-deleted). */
  async isDeleted(stream: string): Promise<boolean> {
    try {
      for await (const _ of this.client.readStream(this.name(stream), { direction: BACKWARDS, fromRevision: END, maxCount: 1 })) break;
      return false;
    } catch (error) {
      if (errorType(error) === 'stream-deleted') return true;
      if (errorType(error) === 'stream-not-found') return false;
      throw error;
    }
  }

  /** Reads the stream's current revision and where the request's ids already are, then decides. */
  private async plan(request: AppendRequest) {
    const { stream, events, expectedRevision } = request;
    const found = new Map<string, StoredRef>();
    const tail = await this.collect(stream, { direction: 'backwards', maxCount: RETRY_WINDOW });
    const current = tail[0]?.revision ?? NO_STREAM;
    for (const event of tail) found.set(event.id, event);
    const base = expectedRevision === 'no_stream' ? NO_STREAM : expectedRevision;
    if (typeof base === 'bigint' && base + 1n <= current && current - base > BigInt(RETRY_WINDOW)) {
      // An exact retry may sit older than the window: read exactly where it would be.
      for (const event of await this.collect(stream, { fromRevision: base + 1n, maxCount: events.length })) found.set(event.id, event);
    }
    const stored = events.map((event) => found.get(event.id));
    return { request, current, plan: planAppend(stream, events, expectedRevision, current, stored) };
  }

  private async collect(stream: string, options: ReadStreamOptions): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    const reading = this.client.readStream(this.name(stream), {
      direction: options.direction === 'backwards' ? BACKWARDS : FORWARDS,
      fromRevision:
        options.fromRevision === undefined ? (options.direction === 'backwards' ? END : START) : (options.fromRevision as bigint),
      maxCount: options.maxCount ?? PAGE,
    });
    try {
      for await (const resolved of reading) {
        const event = this.toRecorded(resolved);
        if (event) events.push(event);
      }
    } catch (error) {
      if (errorType(error) === 'stream-not-found') return [];
      if (errorType(error) === 'stream-deleted') throw new StreamDeleted(stream);
      throw error;
    }
    return events;
  }

  private async write(stream: string, events: EventData[], current: bigint, expected: ExpectedRevision): Promise<AppendResult> {
    try {
      const result = await this.client.appendToStream(
        this.name(stream),
        events.map((e) => jsonEvent({ id: e.id, type: e.type, data: (e.data ?? null) as never, metadata: (e.metadata ?? {}) as never })),
        { expectedRevision: current === NO_STREAM ? ESDB_NO_STREAM : current },
      );
      if (!result.position) throw new Error('EventStoreDB did not return the log position of an append');
      return { nextExpectedRevision: result.nextExpectedRevision, position: packPosition(result.position), duplicate: false };
    } catch (error) {
      if (errorType(error) === 'stream-deleted') throw new StreamDeleted(stream);
      if (errorType(error) === 'wrong-expected-version') {
        // Someone wrote between the check and the write. Only an expectation that
        // tolerates that is worth a retry: the next attempt re-plans against the new state.
        if (expected === 'any' || expected === 'stream_exists') throw new Raced(stream);
        throw wrongVersion(stream, expected, current);
      }
      throw error;
    }
  }

  /** Repeats `call` after connection failures and lost races; each attempt re-plans, so repeats write nothing twice. */
  private async withRetry<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (error instanceof WrongExpectedVersion || error instanceof StreamDeleted) throw error;
        const repeatable = error instanceof Raced || isTransient(error);
        if (!repeatable || attempt >= this.retries || this.closed) throw error instanceof Raced ? error.cause : error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 50 * 2 ** attempt)));
      }
    }
  }
}

/** A write lost a race with another writer; the append is planned again. */
class Raced extends Error {
  constructor(readonly stream: string) {
    super(`concurrent append to ${stream}`);
    this.cause = new WrongExpectedVersion(stream, 'any', 'changed');
  }
}

function errorType(error: unknown): string | undefined {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' ? type : undefined;
}

function isMissing(error: unknown): boolean {
  const type = errorType(error);
  return type === 'stream-not-found' || type === 'stream-deleted';
}

/** The connection string without credentials, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
