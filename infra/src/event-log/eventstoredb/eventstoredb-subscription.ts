import { START, eventTypeFilter, streamNameFilter, type AllStreamSubscription, type Filter } from '@eventstore/db-client';
import type { EventFilter, Subscription, SubscriptionItem } from '@elma/domain';
import type { EventStoreDbEventLog } from './eventstoredb-event-log';
import { DeletedStreams } from './deleted-streams';
import { idleCheckpoint, isTransient, matchesFilter, packPosition, serverFilter, unpackPosition } from './positions';

/** Events the server scans per filtered window before it sends a checkpoint. */
const SEARCH_WINDOW = 64;
/** How long a "this stream is alive" answer is trusted before asking again. */
const ALIVE_FOR_MS = 1_000;

interface Options {
  log: EventStoreDbEventLog;
  from: bigint | 'start' | 'end';
  filter?: EventFilter;
  idleCheckpointMs: number;
  onClose(subscription: EventStoreDbSubscription): void;
}

/**
 * A catch-up subscription on $all with the filter applied by the server.
 * Checkpoints come from two places: the server's own (one per scanned window
 * of filtered-out events) and, when the subscription is idle, one at the head
 * of the log once a read shows that no kept event lies before it, so that a
 * consumer of a sparse filter reaches the head without waiting for traffic.
 * A dropped connection resubscribes after the last position handed out.
 */
export class EventStoreDbSubscription implements Subscription {
  private readonly queue: SubscriptionItem[] = [];
  private waiting?: (result: IteratorResult<SubscriptionItem>) => void;
  private failure?: Error;
  private server?: AllStreamSubscription;
  private acknowledged = -1n;
  /** A server checkpoint that arrived while events before it were still on their way to `deliver`. */
  private pendingCheckpoint?: bigint;
  private delivering = 0;
  private closed = false;
  private probing = false;
  private readonly timer: NodeJS.Timeout;
  private readonly deleted: DeletedStreams;
  private aliveSince = Date.now();
  /** Resolves once the start position is fixed ('end' is read from the log first). */
  readonly ready: Promise<void>;

  constructor(private readonly options: Options) {
    this.deleted = new DeletedStreams(options.log);
    this.ready = this.start();
    // A start that fails (the server unreachable) fails the iteration, never the process.
    this.ready.catch((error: unknown) => this.fail(error as Error));
    this.timer = setInterval(() => void this.probe(), options.idleCheckpointMs);
    this.timer.unref();
  }

  [Symbol.asyncIterator](): AsyncIterator<SubscriptionItem> {
    return {
      next: () => {
        const item = this.queue.shift();
        if (item) return Promise.resolve({ value: item, done: false });
        if (this.failure) return Promise.reject(this.failure);
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.waiting = resolve;
        });
      },
      return: async () => {
        await this.unsubscribe();
        return { value: undefined, done: true };
      },
    };
  }

  async unsubscribe(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.server?.unsubscribe().catch(() => undefined);
    this.options.onClose(this);
    this.settle();
  }

  private async start(): Promise<void> {
    const { from } = this.options;
    this.acknowledged = from === 'start' ? -1n : from === 'end' ? await this.options.log.headPosition() : from;
    this.connect();
  }

  private connect(): void {
    if (this.closed) return;
    const { log } = this.options;
    const server = log.client.subscribeToAll({
      fromPosition: this.acknowledged >= 0n ? unpackPosition(this.acknowledged) : START,
      filter: this.serverFilter(),
    });
    this.server = server;
    server.on('data', (resolved) => void this.deliver(resolved));
    server.on('caughtUp', () => void this.probe());
    server.on('error', (error: Error) => this.dropped(server, error));
  }

  private serverFilter(): Filter {
    const spec = serverFilter(this.options.filter, this.options.log.namespace);
    const common = {
      checkpointInterval: 1,
      maxSearchWindow: SEARCH_WINDOW,
      checkpointReached: (_: unknown, position: { commit: bigint; prepare: bigint }) => this.serverCheckpoint(packPosition(position)),
    };
    if ('prefixes' in spec) return streamNameFilter({ prefixes: spec.prefixes, ...common });
    return spec.on === 'eventType' ? eventTypeFilter({ regex: spec.regex, ...common }) : streamNameFilter({ regex: spec.regex, ...common });
  }

  private async deliver(resolved: Parameters<EventStoreDbEventLog['toRecorded']>[0]): Promise<void> {
    const server = this.server;
    server?.pause();
    this.delivering++;
    try {
      const event = this.options.log.toRecorded(resolved);
      if (!event || event.position <= this.acknowledged) return;
      if (!matchesFilter(this.options.filter, event.streamId, event.type)) return;
      if (Date.now() - this.aliveSince > ALIVE_FOR_MS) {
        this.deleted.refresh();
        this.aliveSince = Date.now();
      }
      if (await this.deleted.has(event.streamId)) return;
      this.push({ kind: 'event', event });
    } catch (error) {
      this.fail(error as Error);
    } finally {
      this.delivering--;
      server?.resume();
      this.flushCheckpoint();
    }
  }

  /**
   * The server sends a checkpoint after the events before it, but through a
   * callback, while those events may still wait in the stream's buffer: it is
   * handed out only once they have been, so no consumer saves a position past
   * an event it has not seen.
   */
  private serverCheckpoint(position: bigint): void {
    if (this.pendingCheckpoint === undefined || position > this.pendingCheckpoint) this.pendingCheckpoint = position;
    this.flushCheckpoint();
  }

  private flushCheckpoint(): void {
    if (this.pendingCheckpoint === undefined || this.delivering > 0 || (this.server?.readableLength ?? 0) > 0) return;
    const position = this.pendingCheckpoint;
    this.pendingCheckpoint = undefined;
    this.checkpoint(position);
  }

  private checkpoint(position: bigint): void {
    if (position > this.acknowledged) this.push({ kind: 'checkpoint', position });
  }

  /** When idle: a checkpoint at the head, if no kept event lies between the last position handed out and it. */
  private async probe(): Promise<void> {
    if (this.probing || this.closed || this.queue.length > 0 || !this.server) return;
    this.probing = true;
    try {
      const { log, filter } = this.options;
      const head = await log.headPosition();
      if (head <= this.acknowledged) return;
      let firstKept: bigint | undefined;
      const fromPosition = this.acknowledged >= 0n ? this.acknowledged : 'start';
      for await (const event of log.readAll({ fromPosition, filter, maxCount: 1 })) firstKept = event.position;
      const at = idleCheckpoint(this.acknowledged, head, firstKept);
      if (at !== undefined) this.checkpoint(at);
    } catch {
      // A failed probe only delays a checkpoint; the next tick tries again.
    } finally {
      this.probing = false;
    }
  }

  private dropped(server: AllStreamSubscription, error: Error): void {
    if (this.closed || server !== this.server) return;
    if (!isTransient(error)) return this.fail(error);
    this.server = undefined;
    setTimeout(() => this.connect(), 250).unref();
  }

  private push(item: SubscriptionItem): void {
    if (this.closed) return;
    this.acknowledged = item.kind === 'event' ? item.event.position : item.position;
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = undefined;
      waiting({ value: item, done: false });
    } else this.queue.push(item);
  }

  private fail(error: Error): void {
    this.failure = error;
    this.settle();
  }

  private settle(): void {
    const waiting = this.waiting;
    if (!waiting) return;
    this.waiting = undefined;
    if (this.failure && !this.closed) waiting(Promise.reject(this.failure) as never);
    else waiting({ value: undefined, done: true });
  }
}
