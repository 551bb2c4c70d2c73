import { Worker } from 'node:worker_threads';
import {
  DomainError,
  type CheckpointStore,
  type EmbeddedVector,
  type EmbeddingLag,
  type ErasedProbe,
  type HybridQuery,
  type IndexFilter,
  type IndexedMemory,
  type Leftovers,
  type LineageEntry,
  type ListQuery,
  type MemoryIndex,
  type MemoryRecord,
  type Neighbours,
  type PendingEmbedding,
  type SearchHit,
  type StoredUsage,
} from '@elma/domain';
import type { SqliteMemoryIndex, SqliteMemoryIndexOptions } from '../sqlite/sqlite-memory-index';
import { DEFAULT_QUANTIZATION, storedVectorForms } from '../sqlite/vector-graph';
import { fromWire, type IndexCall, type IndexReply, type IndexThreadReady } from './wire';

/** The index thread ended while calls were waiting for it (a bug or a native fault in it); the next call starts it again. */
export class IndexThreadExited extends DomainError {
  constructor(exitCode: number) {
    super('INDEX.UNAVAILABLE', `the index thread exited (code ${exitCode}); the next call starts it again`, { exitCode });
  }
}

export interface ThreadWatch {
  exited?(exit: { exitCode: number; name?: string; code?: string }): void;
}

type Partitions = ReturnType<SqliteMemoryIndex['memory']>;

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/**
 * The embedded index (`SqliteMemoryIndex`) in a worker thread of its own:
 * the index's work (full-text and graph searches, the projection's writes,
 * graph inserts of the embedding stage's vectors, purges) runs on a second
 * core while this thread serves requests. One thread still owns the files
 * and graphs (ADR 0004), and it answers calls in the order they were made,
 * as the index in this thread would. Errors arrive as the classes callers
 * tell apart (`wire.ts`). If the thread ends unexpectedly, the waiting calls
 * fail with `IndexThreadExited` (503) and the next call starts it again,
 * which reopens the index as a restart would.
 */
export class ThreadedMemoryIndex implements MemoryIndex, CheckpointStore {
  private worker: Worker | undefined;
  private starting: Promise<Worker> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  /** With `exited`, told when the thread ends unexpectedly: its exit code, and the class and code of the error that ended it. */
  static async open(options: SqliteMemoryIndexOptions, watch: ThreadWatch = {}): Promise<ThreadedMemoryIndex> {
    const index = new ThreadedMemoryIndex(options, watch);
    await index.thread();
    return index;
  }

  private constructor(
    private readonly options: SqliteMemoryIndexOptions,
    private readonly watch: ThreadWatch,
  ) {}

  upsert(tenant: string, memories: IndexedMemory[]): Promise<void> {
    return this.call('upsert', tenant, memories);
  }

  get(tenant: string, id: string): Promise<IndexedMemory | undefined> {
    return this.call('get', tenant, id);
  }

  search(query: HybridQuery): Promise<SearchHit[]> {
    return this.call('search', query);
  }

  neighbours(tenant: string, ids: string[], filter: IndexFilter): Promise<Neighbours[]> {
    return this.call('neighbours', tenant, ids, filter);
  }

  purge(tenant: string, ids: string[]): Promise<void> {
    return this.call('purge', tenant, ids);
  }

  /** Computed here: the forms depend on the graph's scalar type only. */
  storedVectorForms(vector: Float32Array): Buffer[] {
    return storedVectorForms(vector, this.options.graph?.quantization ?? DEFAULT_QUANTIZATION);
  }

  storedUsage(tenant: string): Promise<StoredUsage> {
    return this.call('storedUsage', tenant);
  }

  records(tenant: string): AsyncIterable<MemoryRecord> {
    return this.iterate<MemoryRecord>('records', tenant);
  }

  lineage(tenant: string): AsyncIterable<LineageEntry> {
    return this.iterate<LineageEntry>('lineage', tenant);
  }

  list(query: ListQuery): Promise<MemoryRecord[]> {
    return this.call('list', query);
  }

  versions(tenant: string, id: string): Promise<MemoryRecord[]> {
    return this.call('versions', tenant, id);
  }

  lineageOf(tenant: string, match: { ids?: readonly string[]; subjects?: readonly string[] }): Promise<LineageEntry[]> {
    return this.call('lineageOf', tenant, match);
  }

  leftovers(tenant: string, probes: ErasedProbe[], options: { minCosine: number }): Promise<Leftovers> {
    return this.call('leftovers', tenant, probes, options);
  }

  currentFacts(tenant: string, factKey: string): Promise<MemoryRecord[]> {
    return this.call('currentFacts', tenant, factKey);
  }

  recordUsage(tenant: string, ids: string[], use: 'retrieved' | 'adopted', at: string): Promise<void> {
    return this.call('recordUsage', tenant, ids, use, at);
  }

  pendingEmbeddings(tenant: string, limit: number): Promise<PendingEmbedding[]> {
    return this.call('pendingEmbeddings', tenant, limit);
  }

  setVectors(tenant: string, items: EmbeddedVector[]): Promise<void> {
    return this.call('setVectors', tenant, items);
  }

  embeddingLag(tenant?: string): Promise<EmbeddingLag> {
    return this.call('embeddingLag', tenant);
  }

  tenants(): Promise<string[]> {
    return this.call('tenants');
  }

  count(tenant: string): Promise<number> {
    return this.call('count', tenant);
  }

  dropTenant(tenant: string): Promise<void> {
    return this.call('dropTenant', tenant);
  }

  quarantined(): Promise<string[]> {
    return this.call('quarantined');
  }

  /** What the open partitions hold against the memory budget (`SqliteMemoryIndex.memory`). */
  memory(): Promise<Partitions> {
    return this.call('memory');
  }

  flush(): Promise<void> {
    return this.call('flush');
  }

  load(name: string): Promise<bigint | undefined> {
    return this.call('load', name);
  }

  save(name: string, position: bigint): Promise<void> {
    return this.call('save', name, position);
  }

  /** Closes the index in its thread (graphs written, files closed), then ends the thread. */
  async close(): Promise<void> {
    if (this.closed) return;
    const worker = this.worker;
    try {
      if (worker) await this.call('close');
    } finally {
      this.closed = true;
      this.worker = undefined;
      await worker?.terminate();
      for (const call of this.pending.values()) call.reject(new Error('the memory index is closed'));
      this.pending.clear();
    }
  }

  private async call<T>(method: string, ...args: unknown[]): Promise<T> {
    if (this.closed) throw new Error('the memory index is closed');
    const worker = await this.thread();
    const id = this.nextId++;
    const reply = new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
    });
    // Only waiting calls keep the process alive, as the index in this thread would.
    if (this.pending.size === 1) worker.ref();
    worker.postMessage({ id, method, args } satisfies IndexCall);
    return reply;
  }

  private settle(reply: IndexReply): void {
    const waiting = this.pending.get(reply.id);
    if (!waiting) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker?.unref();
    if (reply.ok) waiting.resolve(reply.value);
    else waiting.reject(fromWire(reply.error));
  }

  /** The running thread, started (and its index opened) when there is none. */
  private thread(): Promise<Worker> {
    if (this.worker) return Promise.resolve(this.worker);
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(): Promise<Worker> {
    const worker = new Worker(THREAD.file, { workerData: { options: this.options, entry: THREAD.entry } });
    let settle: { message(ready: IndexThreadReady): void; error(error: Error): void; exit(code: number): void };
    const ready = await new Promise<IndexThreadReady>((resolve, reject) => {
      settle = { message: resolve, error: reject, exit: (code) => reject(new IndexThreadExited(code)) };
      worker.once('message', settle.message).once('error', settle.error).once('exit', settle.exit);
    }).finally(() => {
      // Not removeAllListeners: the worker's own listeners (which start and ref its message port) must stay.
      worker.off('message', settle.message).off('error', settle.error).off('exit', settle.exit);
    });
    if (!ready.ready) {
      await worker.terminate();
      throw fromWire(ready.error);
    }
    worker.on('message', (reply: IndexReply) => this.settle(reply));
    // An uncaught error ends the thread: 'exit' follows and fails what waits.
    let fault: { name: string; code?: string } | undefined;
    worker.on('error', (error: Error & { code?: unknown }) => {
      fault = { name: error.name, ...(typeof error.code === 'string' ? { code: error.code } : {}) };
    });
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.watch.exited?.({ exitCode: code, ...fault });
      const waiting = [...this.pending.values()];
      this.pending.clear();
      for (const call of waiting) call.reject(new IndexThreadExited(code));
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private async *iterate<T>(method: 'records' | 'lineage', tenant: string): AsyncGenerator<T> {
    const cursor = await this.call<number>('openCursor', method, tenant);
    let done = false;
    try {
      while (!done) {
        const page = await this.call<{ items: T[]; done: boolean }>('nextPage', cursor);
        done = page.done;
        yield* page.items;
      }
    } finally {
      if (!done) await this.call('closeCursor', cursor).catch(() => undefined);
    }
  }
}

/**
 * The thread's module: from the sources (this file is TypeScript, under tsx
 * or vitest), tsx's loader is registered first (`index-thread-boot.mjs`);
 * from the bundle, the built `index-thread.mjs` beside it (scripts/build.mjs).
 */
const THREAD = import.meta.url.endsWith('.ts')
  ? { file: new URL('./index-thread-boot.mjs', import.meta.url), entry: new URL('./index-thread.ts', import.meta.url).href }
  : { file: new URL('./index-thread.mjs', import.meta.url), entry: undefined };
