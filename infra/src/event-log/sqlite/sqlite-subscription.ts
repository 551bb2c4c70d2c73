import type { RecordedEvent, Subscription, SubscriptionItem } from '@elma/domain';

export interface ScanResult<T> {
  /** Matching events after the requested position, in position order. */
  events: T[];
  /** Position up to which the log has been scanned, matching or not. */
  scannedTo: bigint;
  /** The log was closed: the subscription ends. */
  closed: boolean;
}

export interface SqliteSubscriptionOptions {
  /** Exclusive start position. */
  after: bigint;
  pageSize: number;
  pollIntervalMs: number;
  scan(after: bigint): ScanResult<RecordedEvent>;
  onClose(subscription: SqliteSubscription): void;
}

/**
 * A catch-up subscription: pages through history, then waits for either an
 * in-process wake-up (an append through the same log) or a short poll interval
 * (appends from other processes). After every batch it yields a checkpoint with
 * the scanned position, so consumers of sparse filters can advance too.
 */
export class SqliteSubscription implements Subscription {
  private closed = false;
  /** Set when a wake-up arrives while the loop is busy, so the next idle returns at once. */
  private pendingWake = false;
  private wakeUp: (() => void) | undefined;
  private readonly items: AsyncGenerator<SubscriptionItem>;

  constructor(private readonly options: SqliteSubscriptionOptions) {
    this.items = this.run();
  }

  [Symbol.asyncIterator](): AsyncIterator<SubscriptionItem> {
    return this.items;
  }

  wake(): void {
    const wakeUp = this.wakeUp;
    if (wakeUp) wakeUp();
    else this.pendingWake = true;
  }

  async unsubscribe(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.options.onClose(this);
    this.wake();
  }

  private async *run(): AsyncGenerator<SubscriptionItem> {
    let after = this.options.after;
    let checkpoint = after;
    try {
      while (!this.closed) {
        const page = this.options.scan(after);
        if (page.closed) return;
        for (const event of page.events) {
          if (this.closed) return;
          yield { kind: 'event', event };
        }
        if (this.closed) return;
        if (page.scannedTo > after) after = page.scannedTo;
        if (after > checkpoint) {
          checkpoint = after;
          yield { kind: 'checkpoint', position: after };
        }
        if (page.events.length < this.options.pageSize) await this.idle();
      }
    } finally {
      this.closed = true;
      this.options.onClose(this);
    }
  }

  private idle(): Promise<void> {
    if (this.pendingWake || this.closed) {
      this.pendingWake = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        this.pendingWake = false;
        resolve();
      };
      const timer = setTimeout(done, this.options.pollIntervalMs);
      this.wakeUp = done;
    });
  }
}
