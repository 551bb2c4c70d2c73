import type { Embedder, MemoryIndex } from '@elma/domain';
import type { Logger } from '@elma/shared';

/** Longest wait in `stop()` for the batch in flight. */
const STOP_GRACE_MS = 2_000;

export interface EmbeddingStageOptions {
  /** Records embedded per embedder call (and per `setVectors`). */
  batchSize?: number;
  /** How often the stage wakes for the tenants it was told about and not finished (in ms). */
  intervalMs?: number;
  /**
   * How often it looks at every tenant for work nobody announced (a replay in another process, records
   * left pending by a restart), in ms. Rarer: on the embedded index it opens every tenant's partition.
   */
  sweepMs?: number;
  /** First pause after an embedder failure, doubled on each further failure up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
}

export interface EmbeddingStageStatus {
  /** The embedder's model (id with its version): the model of every vector the stage writes. */
  model: string;
  running: boolean;
  /** Records embedded since the stage started. */
  embedded: number;
  /** Embedder failures in a row (0 once a batch succeeds again). */
  failures: number;
  /** The last failure's error class or code (never a text). */
  lastError?: string;
  /** When the next try after a failure is due (ISO 8601). */
  retryAt?: string;
}

const DEFAULTS = { batchSize: 64, intervalMs: 5_000, sweepMs: 60_000, backoffMs: 500, maxBackoffMs: 60_000 } as const;

/**
 * Gives records their vectors in the background. The projection indexes
 * records without vectors (BM25 finds them at once) and wakes the stage with
 * the tenants it wrote; the stage takes the tenants' pending records in
 * batches, embeds them as documents and writes them back with `setVectors`,
 * which keeps a vector only if the record is still at that version (so a
 * record revised or purged meanwhile is never given a stale vector back).
 * A timer also wakes it, for work no batch announced (a reindex's replay,
 * records left pending by a restart).
 *
 * The projection never waits for it. An embedder that fails is retried with
 * an exponential, capped pause; the records stay BM25-searchable meanwhile
 * and `MemoryIndex.embeddingLag` shows them waiting. Logs carry tenant ids,
 * counts and error codes, never text.
 */
export class EmbeddingStage {
  private readonly options: Required<EmbeddingStageOptions>;
  /** Tenants that may have pending records. */
  private readonly dirty = new Set<string>();
  private sweep = true;
  private timer?: NodeJS.Timeout;
  private pass?: Promise<void>;
  private started = false;
  private stopped = false;
  private failures = 0;
  private lastError?: string;
  private retryAt = 0;
  private embedded = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly deps: { index: MemoryIndex; embedder: Embedder; logger: Logger },
    options: EmbeddingStageOptions = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  /** Starts the timer and a first pass over every tenant (records left pending by the last run). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.stopped = false;
    this.sweep = true;
    let lastSweep = Date.now();
    this.timer = setInterval(() => {
      if (Date.now() - lastSweep >= this.options.sweepMs) {
        lastSweep = Date.now();
        this.sweep = true;
      }
      this.kick();
    }, this.options.intervalMs);
    this.timer.unref();
    this.kick();
  }

  /**
   * Stops the timer and waits for the batch in flight (its vectors are written or dropped, never half), at
   * most STOP_GRACE_MS: an embedder that hangs must not hold up a shutdown for its timeouts and retries. A
   * batch that answers later is dropped (its records stay pending for the next start).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.started = false;
    clearInterval(this.timer);
    this.timer = undefined;
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([this.pass, new Promise<void>((resolve) => (grace = setTimeout(resolve, STOP_GRACE_MS)))]);
    clearTimeout(grace);
    this.settleIdle();
  }

  /** Wakes the stage for these tenants (all of them when none are named); returns at once. */
  notify(tenants?: Iterable<string>): void {
    if (tenants === undefined) this.sweep = true;
    else for (const tenant of tenants) this.dirty.add(tenant);
    this.kick();
  }

  status(): EmbeddingStageStatus {
    return {
      model: this.deps.embedder.model,
      running: this.started,
      embedded: this.embedded,
      failures: this.failures,
      ...(this.lastError ? { lastError: this.lastError } : {}),
      ...(this.retryAt > Date.now() ? { retryAt: new Date(this.retryAt).toISOString() } : {}),
    };
  }

  /**
   * Resolves when the stage has nothing it was told about left to do (at
   * once when it is not started). While the embedder fails it does not resolve.
   */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Resolves once the tenant (or every tenant) has no pending record; for
   * tests, the eval and the bench. Throws after `timeoutMs` (an embedder that
   * keeps failing). A tenant waiting for a reindex counts as done.
   */
  async waitForEmbedded(tenant?: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const tenants = tenant === undefined ? await this.deps.index.tenants() : [tenant];
      let pending = false;
      for (const t of tenants) {
        if ((await this.deps.index.pendingEmbeddings(t, 1)).length > 0) {
          pending = true;
          this.dirty.add(t);
        }
      }
      if (!pending) return;
      if (Date.now() > deadline) throw new Error(`records still wait for their vectors after ${timeoutMs} ms`);
      if (this.started) {
        this.kick();
        await Promise.race([this.idle(), sleep(Math.max(0, this.retryAt - Date.now()) + 10)]);
      } else {
        // Not started (a test or a one-off command): run a pass here.
        await this.runPass();
      }
      await sleep(5);
    }
  }

  /** Runs one pass now, whether started or not (a CLI command, a test); resolves when it ends. */
  async runPass(): Promise<void> {
    if (this.pass) return this.pass;
    this.pass = this.drain().finally(() => {
      this.pass = undefined;
      this.settleIdle();
    });
    return this.pass;
  }

  private kick(): void {
    if (this.stopped || !this.started || this.pass) return;
    if (Date.now() < this.retryAt) return;
    void this.runPass().then(() => {
      // Work announced during the pass: another one.
      if (this.hasWork() && Date.now() >= this.retryAt) this.kick();
    });
  }

  private hasWork(): boolean {
    return this.sweep || this.dirty.size > 0;
  }

  private isIdle(): boolean {
    return !this.pass && (!this.hasWork() || !this.started);
  }

  private settleIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Embeds every pending record of the dirty tenants, batch by batch; stops at the first embedder failure. */
  private async drain(): Promise<void> {
    if (this.sweep) {
      this.sweep = false;
      try {
        for (const tenant of await this.deps.index.tenants()) this.dirty.add(tenant);
      } catch (error) {
        this.fail(error);
        return;
      }
    }
    const lastFirst = new Map<string, string>();
    while (this.dirty.size > 0 && !this.stopped) {
      const [tenant] = this.dirty;
      let pending;
      try {
        pending = await this.deps.index.pendingEmbeddings(tenant, this.options.batchSize);
      } catch (error) {
        // A quarantined or unreadable partition: skip it (its health says why); the timer comes back.
        this.dirty.delete(tenant);
        this.deps.logger.warn('embedding stage: pending records could not be read', { tenant, error: codeOf(error) });
        continue;
      }
      if (pending.length === 0) {
        this.dirty.delete(tenant);
        continue;
      }
      const first = `${pending[0].id}#${pending[0].version}`;
      if (lastFirst.get(tenant) === first) {
        // The index ignored the last batch's vectors (its configured model is not the embedder's): no busy loop.
        this.dirty.delete(tenant);
        this.deps.logger.warn('embedding stage: the index keeps no vector of this embedder; are both configured with the same model?', {
          tenant,
          model: this.deps.embedder.model,
        });
        continue;
      }
      lastFirst.set(tenant, first);
      let vectors: Float32Array[];
      try {
        vectors = await this.deps.embedder.embed(
          pending.map((p) => p.text),
          'document',
        );
        if (vectors.length !== pending.length) throw new Error('the embedder returned a different number of vectors');
      } catch (error) {
        this.fail(error, tenant, pending.length);
        return;
      }
      // Stopped while the model was working: the index may be closing, and the records stay pending.
      if (this.stopped) return;
      const model = this.deps.embedder.model;
      try {
        await this.deps.index.setVectors(
          tenant,
          pending.map((p, i) => ({ id: p.id, version: p.version, vector: vectors[i], model })),
        );
      } catch (error) {
        this.fail(error, tenant, pending.length);
        return;
      }
      this.embedded += pending.length;
      if (this.failures > 0) this.deps.logger.info('embedding stage: embedder answers again', { failures: this.failures });
      this.failures = 0;
      this.lastError = undefined;
      this.retryAt = 0;
      // A macrotask turn per batch: the API and the projection in this process go on meanwhile.
      await new Promise<void>((resolve) => setImmediate(resolve));
      // A batch smaller than asked for was the last one.
      if (pending.length < this.options.batchSize) this.dirty.delete(tenant);
    }
  }

  private fail(error: unknown, tenant?: string, records?: number): void {
    this.failures += 1;
    this.lastError = codeOf(error);
    const pause = Math.min(this.options.maxBackoffMs, this.options.backoffMs * 2 ** (this.failures - 1));
    this.retryAt = Date.now() + pause;
    this.deps.logger.warn('embedding stage: batch failed; retrying after a pause', {
      ...(tenant ? { tenant } : {}),
      ...(records ? { records } : {}),
      failures: this.failures,
      retryInMs: pause,
      error: this.lastError,
    });
    if (this.started && !this.stopped) setTimeout(() => this.kick(), pause + 1).unref();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** An error's code or class name: nothing of the texts the embedder was given. */
function codeOf(error: unknown): string {
  if (error && typeof error === 'object') {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    return (error as Error).name ?? 'Error';
  }
  return typeof error;
}
