import type { CheckpointStore, EventLog, RecordedEvent, Subscription } from '@elma/domain';
import { DomainError, groupBy, IndexPartitionCorrupt } from '@elma/domain';
import type { Logger } from '@elma/shared';
import { tenantOf } from '../sealing/sealed-events';
import { StorageFull, storageFullOf } from '@elma/shared';
import { VIEW_SOURCE_PREFIXES, type Projection } from './projection';

export const VIEWS_CHECKPOINT = 'views';

const MAX_BATCH = 1000;

/**
 * Events read ahead of the apply loop, at most: the reader waits for room
 * beyond this. Without a bound, a projection started behind a long backlog
 * reads the whole backlog into memory before the first batch is applied, and
 * every later batch pays for the garbage collector walking that heap.
 */
export const MAX_QUEUED = 2 * MAX_BATCH;

export class ProjectionLagging extends DomainError {
  constructor(position: bigint, reached: bigint) {
    super('PROJECTION.LAGGING', `the projection has not reached position ${position} in time (at ${reached})`, {
      position: position.toString(),
      reached: reached.toString(),
    });
  }
}

/**
 * A read-your-writes wait for a position the log has not reached: no write
 * returned it, so waiting cannot help (a client error, not a lagging engine).
 */
export class PositionNotWritten extends DomainError {
  constructor(position: bigint, head: bigint) {
    super('CONSISTENCY.POSITION_NOT_WRITTEN', `no write has reached log position ${position} (the log ends at ${head})`, {
      position: position.toString(),
      head: head.toString(),
    });
  }
}

const STORAGE_FULL = new StorageFull().code;

/** The projection lag counts this many events at most: beyond it the views are far behind anyway. */
export const LAG_COUNT_CAP = 10_000;

/** How often a checkpoint that only skipped filtered-out events is written. */
const IDLE_SAVE_INTERVAL_MS = 1_000;

/**
 * Runs the projection as a catch-up subscription with a durable checkpoint.
 * A reader loop queues events; the apply loop drains whatever has queued (up
 * to a batch) so that batches grow under load and stay small when idle. The
 * checkpoint is saved only after a batch is applied: a crash replays at most
 * one batch, and replay is idempotent, so there is no loss and no duplicate.
 */
/** Background work over what the projection indexed; never blocks it (`notify` returns at once). */
export interface ProjectionFollower {
  start(): void;
  notify(tenants: string[]): void;
  stop(): Promise<void>;
}

export class ProjectionRunner {
  private subscription?: Subscription;
  private position = -1n;
  private queue: RecordedEvent[] = [];
  private scanned = -1n;
  private wake?: () => void;
  /** Resolves the reader's wait for room in the queue (see MAX_QUEUED). */
  private room?: () => void;
  private stopped = false;
  private loops: Promise<void>[] = [];
  private waiters: { position: bigint; resolve: () => void }[] = [];
  private lastError?: string;
  /** Why the subscription last failed, until it delivers again. */
  private readError?: string;
  /** When the checkpoint was last written (ms since the epoch). */
  private savedAt = 0;
  applied = 0;
  batches = 0;
  /** Events of tenants whose index partition is quarantined, passed over (a rebuild replays them). */
  skipped = 0;
  private readonly quarantinedSeen = new Set<string>();

  constructor(
    private readonly deps: {
      log: EventLog;
      checkpoints: CheckpointStore;
      projection: Projection;
      logger: Logger;
      /**
       * Work that follows the views in the same process (the embedding stage):
       * started and stopped with the runner, told the tenants of each applied batch.
       */
      follower?: ProjectionFollower;
    },
  ) {}

  async start(): Promise<void> {
    const from = await this.deps.checkpoints.load(VIEWS_CHECKPOINT);
    this.position = from ?? -1n;
    this.scanned = this.position;
    this.subscription = this.subscribe();
    this.loops = [this.read(), this.applyLoop()];
    this.deps.follower?.start();
  }

  /** A subscription after everything already queued: the queue keeps what was read and not yet applied. */
  private subscribe(): Subscription {
    return this.deps.log.subscribeToAll({
      fromPosition: this.scanned >= 0n ? this.scanned : 'start',
      filter: { streamNamePrefix: VIEW_SOURCE_PREFIXES },
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.subscription?.unsubscribe();
    this.wake?.();
    this.room?.();
    await Promise.allSettled(this.loops);
    await this.deps.follower?.stop();
    if (this.subscription && this.position >= 0n) await this.deps.checkpoints.save(VIEWS_CHECKPOINT, this.position).catch(() => undefined);
  }

  /** True between start() and stop(): waitFor() can only be answered then. */
  get running(): boolean {
    return this.subscription !== undefined && !this.stopped;
  }

  /** The last log position whose effects are in the index. */
  get checkpoint(): bigint {
    return this.position;
  }

  status(): { position: string; error?: string } {
    const error = this.lastError ?? this.readError;
    return { position: this.position.toString(), ...(error ? { error } : {}) };
  }

  /**
   * How far the views are behind the log: the events of the projection's
   * streams after the checkpoint (counted up to `cap`, so a long backlog costs
   * one bounded read) and the age of the oldest of them, 0 when caught up.
   * Counts and times only.
   */
  async lag(nowMs: number, cap = LAG_COUNT_CAP): Promise<{ events: number; seconds: number }> {
    let events = 0;
    let oldest: Date | undefined;
    for await (const event of this.deps.log.readAll({
      fromPosition: this.position >= 0n ? this.position : 'start',
      maxCount: cap,
      filter: { streamNamePrefix: VIEW_SOURCE_PREFIXES },
    })) {
      oldest ??= event.created;
      events += 1;
    }
    return { events, seconds: oldest ? Math.max(0, (nowMs - oldest.getTime()) / 1000) : 0 };
  }

  /**
   * Resolves once everything up to `position` is applied; throws `ProjectionLagging` after `timeoutMs`,
   * and `PositionNotWritten` at once for a position beyond the end of the log (no write returned it).
   */
  async waitFor(position: bigint, timeoutMs = 10_000): Promise<void> {
    if (this.position >= position) return;
    const head = await this.deps.log.headPosition();
    if (position > head) throw new PositionNotWritten(position, head);
    // The apply loop may have passed the position while the head was read.
    if (this.position >= position) return;
    return new Promise((resolve, reject) => {
      const waiter = { position, resolve: () => (clearTimeout(timer), resolve()) };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        // Lagging because the index volume is full: the caller gets the cause, which no retry soon will fix.
        reject(this.lastError === STORAGE_FULL ? new StorageFull() : new ProjectionLagging(position, this.position));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /**
   * Reads the subscription into the queue. A subscription that fails (a lost
   * connection, a read error) is opened again after the last event queued,
   * with backoff, for as long as the runner runs: a reader that gave up would
   * leave the views silently behind the log while /health said up.
   */
  private async read(): Promise<void> {
    let attempt = 0;
    while (!this.stopped) {
      try {
        for await (const item of this.subscription!) {
          attempt = 0;
          this.readError = undefined;
          if (item.kind === 'event') {
            this.queue.push(item.event);
            this.scanned = item.event.position;
          } else if (item.position > this.scanned) {
            this.scanned = item.position;
          }
          this.wake?.();
          // Backpressure: the next item is pulled once the apply loop has made room.
          while (this.queue.length >= MAX_QUEUED && !this.stopped) await new Promise<void>((resolve) => (this.room = resolve));
          if (this.stopped) return;
        }
        if (this.stopped) return;
        throw new Error('the subscription ended');
      } catch (error) {
        if (this.stopped) return;
        attempt += 1;
        this.readError = codeOf(error);
        this.deps.logger.error('projection subscription failed; subscribing again', { code: this.readError, attempt });
        await this.subscription!.unsubscribe().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 50 * 2 ** attempt)));
        if (this.stopped) return;
        this.subscription = this.subscribe();
      }
    }
  }

  private async applyLoop(): Promise<void> {
    let attempt = 0;
    while (!this.stopped) {
      if (this.queue.length === 0) {
        // Nothing to apply: a filtered-out stretch of the log still advances the checkpoint.
        if (this.scanned > this.position) {
          // Only filtered-out events (audit, policy...) passed: nothing to replay if this position is lost,
          // so it is saved at most once a second rather than once per append.
          const durable = Date.now() - this.savedAt >= IDLE_SAVE_INTERVAL_MS;
          try {
            await this.advance(this.scanned, durable);
            if (durable) {
              attempt = 0;
              this.lastError = undefined;
            }
          } catch (error) {
            // A checkpoint that cannot be written (a full disk) must not end the loop, nor the process:
            // the position stays where it was and the save is tried again until it succeeds.
            attempt += 1;
            this.lastError = codeOf(error);
            this.deps.logger.error('projection checkpoint failed; retrying', { code: this.lastError, attempt });
            await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 50 * 2 ** attempt)));
          }
          continue;
        }
        // Set synchronously after the emptiness check, so no push can slip between the two.
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      // Let the reader finish queueing the page it is on, so batches are pages rather than single events.
      if (this.queue.length < MAX_BATCH) await new Promise((resolve) => setImmediate(resolve));
      const batch = this.queue.slice(0, MAX_BATCH);
      try {
        await this.applyByTenant(batch);
        this.deps.follower?.notify([...new Set(batch.map(tenantOf))]);
        this.queue.splice(0, batch.length);
        this.room?.();
        this.applied += batch.length;
        this.batches += 1;
        attempt = 0;
        this.lastError = undefined;
        await this.advance(batch[batch.length - 1].position);
      } catch (error) {
        // Keep the batch and retry with backoff: skipping would lose memories.
        attempt += 1;
        this.lastError = codeOf(error);
        this.deps.logger.error('projection batch failed; retrying', {
          code: this.lastError,
          firstEventId: batch[0].id,
          attempt,
        });
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 50 * 2 ** attempt)));
      }
    }
  }

  /**
   * Applies a batch tenant by tenant, so that a tenant whose index partition
   * is corrupt (quarantined by the index) does not hold the others back: its
   * events are passed over here and come back with its rebuild, which replays
   * the tenant's whole log. Any other error fails the batch, which is retried
   * (tenants applied already apply again, idempotently).
   */
  private async applyByTenant(batch: RecordedEvent[]): Promise<void> {
    for (const [tenant, events] of groupBy(batch, tenantOf)) {
      try {
        await this.deps.projection.apply(events);
        // Rebuilt: should it be quarantined again later, that is logged again.
        this.quarantinedSeen.delete(tenant);
      } catch (error) {
        if (!(error instanceof IndexPartitionCorrupt)) throw error;
        this.skipped += events.length;
        if (!this.quarantinedSeen.has(tenant)) {
          this.quarantinedSeen.add(tenant);
          this.deps.logger.error('index partition corrupt: tenant quarantined until `elma rebuild --tenant`', { code: error.code, tenant });
        }
      }
    }
  }

  private async advance(position: bigint, durable = true): Promise<void> {
    if (durable) {
      await this.deps.checkpoints.save(VIEWS_CHECKPOINT, position);
      this.savedAt = Date.now();
    }
    this.position = position;
    const ready = this.waiters.filter((w) => w.position <= position);
    this.waiters = this.waiters.filter((w) => w.position > position);
    for (const waiter of ready) waiter.resolve();
  }
}

function codeOf(error: unknown): string {
  const full = storageFullOf(error);
  if (full) return full.code;
  if (error instanceof DomainError) return error.code;
  if (error instanceof Error) return error.name;
  return 'UNKNOWN';
}
