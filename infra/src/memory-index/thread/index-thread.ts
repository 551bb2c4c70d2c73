/**
 * The index thread (see `ThreadedMemoryIndex`): opens the embedded index
 * with the options it was started with, answers each call in the order it
 * came, and closes the index when told to. Iterations (`records`,
 * `lineage`) are read in pages through cursors, so a tenant of any size
 * never crosses at once.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteMemoryIndex, type SqliteMemoryIndexOptions } from '../sqlite/sqlite-memory-index';
import { toWire, type IndexCall, type IndexReply, type IndexThreadReady } from './wire';

/** Items per page of an iteration. */
const PAGE = 500;

const port = parentPort;
if (!port) throw new Error('index-thread runs as a worker thread (ThreadedMemoryIndex starts it)');
const { options } = workerData as { options: SqliteMemoryIndexOptions };

let index: SqliteMemoryIndex;
try {
  index = await SqliteMemoryIndex.open(options);
  port.postMessage({ ready: true } satisfies IndexThreadReady);
} catch (error) {
  // Told as a message, not thrown: an uncaught error could reach the caller first, without its class.
  port.postMessage({ ready: false, error: toWire(error) } satisfies IndexThreadReady);
  port.close();
  process.exit(1);
}

const cursors = new Map<number, AsyncIterator<unknown>>();
let nextCursor = 1;

/** The calls the thread answers beyond the index's own methods. */
const cursorCalls: Record<string, (...args: never[]) => Promise<unknown>> = {
  async openCursor(method: 'records' | 'lineage', tenant: string) {
    const cursor = nextCursor++;
    cursors.set(cursor, index[method](tenant)[Symbol.asyncIterator]());
    return cursor;
  },
  async nextPage(cursor: number) {
    const iterator = cursors.get(cursor);
    if (!iterator) throw new Error(`index thread: no open cursor ${cursor}`);
    const items: unknown[] = [];
    while (items.length < PAGE) {
      const next = await iterator.next();
      if (next.done) {
        cursors.delete(cursor);
        return { items, done: true };
      }
      items.push(next.value);
    }
    return { items, done: false };
  },
  async closeCursor(cursor: number) {
    await cursors.get(cursor)?.return?.();
    cursors.delete(cursor);
  },
};

/** Methods of the index a caller may reach (everything the port, the checkpoint store and the runtime use). */
const INDEX_METHODS = new Set([
  'upsert',
  'get',
  'search',
  'neighbours',
  'list',
  'versions',
  'purge',
  'lineageOf',
  'leftovers',
  'currentFacts',
  'recordUsage',
  'pendingEmbeddings',
  'setVectors',
  'embeddingLag',
  'tenants',
  'count',
  'storedUsage',
  'dropTenant',
  'quarantined',
  'memory',
  'flush',
  'close',
  'load',
  'save',
]);

async function answer({ method, args }: IndexCall): Promise<unknown> {
  const cursorCall = cursorCalls[method];
  if (cursorCall) return cursorCall(...(args as never[]));
  if (!INDEX_METHODS.has(method)) throw new Error(`index thread: unknown call ${method}`);
  const call = (index as unknown as Record<string, (...a: unknown[]) => unknown>)[method];
  return call.apply(index, args);
}

port.on('message', (call: IndexCall) => {
  answer(call).then(
    (value) => port.postMessage({ id: call.id, ok: true, value } satisfies IndexReply),
    (error: unknown) => port.postMessage({ id: call.id, ok: false, error: toWire(error) } satisfies IndexReply),
  );
  if (call.method === 'close') cursors.clear();
});
