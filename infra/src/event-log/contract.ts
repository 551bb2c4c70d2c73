import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  StreamDeleted,
  WrongExpectedVersion,
  type EventData,
  type EventLog,
  type RecordedEvent,
  type Subscription,
  type SubscriptionItem,
} from '@elma/domain';

export interface EventLogUnderTest {
  log: EventLog;
  cleanup(): Promise<void>;
}

/**
 * The guarantees every EventLog adapter must keep. Each test starts from an
 * empty log made by `factory`.
 */
export function eventLogContract(name: string, factory: () => Promise<EventLogUnderTest>): void {
  describe(`${name} event log contract`, () => {
    let subject: EventLogUnderTest;
    let log: EventLog;

    beforeEach(async () => {
      subject = await factory();
      log = subject.log;
    });

    afterEach(async () => {
      await subject.cleanup();
    });

    describe('expected revisions', () => {
      it('a new stream accepts no_stream and reads back in order with revisions from 0', async () => {
        const events = [event('Opened', { n: 1 }), event('Noted', { n: 2 }), event('Noted', { n: 3 })];
        const result = await log.append('cart-t1-a', events, { expectedRevision: 'no_stream' });

        const read = await collect(log.readStream('cart-t1-a'));
        expect(read.map((e) => e.id)).toEqual(events.map((e) => e.id));
        expect(read.map((e) => e.revision)).toEqual([0n, 1n, 2n]);
        expect(read.every((e) => e.streamId === 'cart-t1-a')).toBe(true);
        expect(result).toEqual({ nextExpectedRevision: 2n, position: read[2].position, duplicate: false });
      });

      it('no_stream is rejected once the stream exists, and nothing is written', async () => {
        await log.append('cart-t1-a', [event('Opened')], { expectedRevision: 'no_stream' });

        const attempt = log.append('cart-t1-a', [event('Opened')], { expectedRevision: 'no_stream' });

        await expect(attempt).rejects.toBeInstanceOf(WrongExpectedVersion);
        expect(await collect(log.readStream('cart-t1-a'))).toHaveLength(1);
      });

      it('stream_exists is rejected for a missing stream and accepted for an existing one', async () => {
        await expect(log.append('cart-t1-a', [event('Noted')], { expectedRevision: 'stream_exists' })).rejects.toBeInstanceOf(
          WrongExpectedVersion,
        );
        expect(await collect(log.readStream('cart-t1-a'))).toHaveLength(0);

        await log.append('cart-t1-a', [event('Opened')], { expectedRevision: 'no_stream' });
        const result = await log.append('cart-t1-a', [event('Noted')], { expectedRevision: 'stream_exists' });

        expect(result.nextExpectedRevision).toBe(1n);
      });

      it('an exact revision must equal the last revision of the stream', async () => {
        await log.append('cart-t1-a', [event('Opened'), event('Noted')], { expectedRevision: 'no_stream' });

        const stale = log.append('cart-t1-a', [event('Noted')], { expectedRevision: 0n });
        await expect(stale).rejects.toMatchObject({
          code: 'EVENT_LOG.WRONG_EXPECTED_VERSION',
          expected: '0',
          actual: '1',
        });
        const ahead = log.append('cart-t1-a', [event('Noted')], { expectedRevision: 5n });
        await expect(ahead).rejects.toBeInstanceOf(WrongExpectedVersion);
        const onMissing = log.append('cart-t1-b', [event('Noted')], { expectedRevision: 0n });
        await expect(onMissing).rejects.toBeInstanceOf(WrongExpectedVersion);

        const result = await log.append('cart-t1-a', [event('Noted')], { expectedRevision: 1n });
        expect(result.nextExpectedRevision).toBe(2n);
        expect(await collect(log.readStream('cart-t1-a'))).toHaveLength(3);
        expect(await collect(log.readStream('cart-t1-b'))).toHaveLength(0);
      });

      it('any appends whatever the current revision', async () => {
        await log.append('cart-t1-a', [event('Opened')], { expectedRevision: 'any' });
        const result = await log.append('cart-t1-a', [event('Noted')], { expectedRevision: 'any' });

        expect(result.nextExpectedRevision).toBe(1n);
      });

      it('a rejected append leaves the whole log untouched', async () => {
        await log.append('cart-t1-a', [event('Opened')], { expectedRevision: 'no_stream' });
        const head = await log.headPosition();

        const attempt = log.append('cart-t1-a', [event('Noted'), event('Noted')], { expectedRevision: 7n });

        await expect(attempt).rejects.toBeInstanceOf(WrongExpectedVersion);
        expect(await log.headPosition()).toBe(head);
        expect(await collect(log.readAll())).toHaveLength(1);
      });
    });

    describe('stored events', () => {
      it('data and metadata round-trip as JSON', async () => {
        const data = { text: 'naïve café – 日本語 🙂', n: 1.5, list: [1, 'two', null, { deep: true }], empty: {} };
        const plain = event('Noted', data);
        const withMetadata: EventData = { ...event('Noted', 'just a string'), metadata: { correlationId: 'c-1', n: 2 } };
        await log.append('cart-t1-a', [plain, withMetadata], { expectedRevision: 'no_stream' });

        const [first, second] = await collect(log.readStream('cart-t1-a'));

        expect(first).toMatchObject({ type: 'Noted', data, metadata: {} });
        expect(second).toMatchObject({ data: 'just a string', metadata: { correlationId: 'c-1', n: 2 } });
        expect(first.created).toBeInstanceOf(Date);
        expect(Math.abs(first.created.getTime() - Date.now())).toBeLessThan(60_000);
      });

      it('positions are global and strictly increasing across streams', async () => {
        const a = await log.append('cart-t1-a', [event('Opened')], { expectedRevision: 'any' });
        const b = await log.append('order-t1-b', [event('Opened'), event('Noted')], { expectedRevision: 'any' });
        const c = await log.append('cart-t1-a', [event('Noted')], { expectedRevision: 'any' });

        const all = await collect(log.readAll());
        const positions = all.map((e) => e.position);
        expect(positions).toEqual([...positions].sort((x, y) => (x < y ? -1 : 1)));
        expect(new Set(positions).size).toBe(4);
        expect([a.position, b.position, c.position]).toEqual([positions[0], positions[2], positions[3]]);
        expect(await log.headPosition()).toBe(positions[3]);
      });

      it('an empty log has head position -1', async () => {
        expect(await log.headPosition()).toBe(-1n);
      });
    });

    describe('idempotent retries', () => {
      it('re-appending the same events at the same place is a no-op reporting duplicate', async () => {
        const events = [event('Opened'), event('Noted')];
        const first = await log.append('cart-t1-a', events, { expectedRevision: 'no_stream' });

        const retry = await log.append('cart-t1-a', events, { expectedRevision: 'no_stream' });

        expect(retry).toEqual({ ...first, duplicate: true });
        expect(await collect(log.readStream('cart-t1-a'))).toHaveLength(2);
      });

      it('a retry at an exact revision is a no-op even after later appends', async () => {
        await log.append('cart-t1-a', [event('Opened')], { expectedRevision: 'no_stream' });
        const events = [event('Noted')];
        const first = await log.append('cart-t1-a', events, { expectedRevision: 0n });
        await log.append('cart-t1-a', [event('Noted')], { expectedRevision: 1n });

        const retry = await log.append('cart-t1-a', events, { expectedRevision: 0n });

        expect(retry).toEqual({ ...first, duplicate: true });
        expect(await collect(log.readStream('cart-t1-a'))).toHaveLength(3);
      });

      it('the same events at a different expected revision are rejected', async () => {
        const events = [event('Opened')];
        await log.append('cart-t1-a', events, { expectedRevision: 'no_stream' });
        await log.append('cart-t1-a', [event('Noted')], { expectedRevision: 0n });

        const misplaced = log.append('cart-t1-a', events, { expectedRevision: 1n });

        await expect(misplaced).rejects.toBeInstanceOf(WrongExpectedVersion);
        expect(await collect(log.readStream('cart-t1-a'))).toHaveLength(2);
      });

      it('with any, a retry is a no-op reporting duplicate', async () => {
        const events = [event('Opened')];
        const first = await log.append('cart-t1-a', events, { expectedRevision: 'any' });

        const retry = await log.append('cart-t1-a', events, { expectedRevision: 'any' });

        expect(retry).toEqual({ ...first, duplicate: true });
      });
    });

    describe('appendMany', () => {
      it('writes several streams in one unit', async () => {
        await log.append('cart-t1-a', [event('Opened')], { expectedRevision: 'no_stream' });

        const results = await log.appendMany([
          { stream: 'cart-t1-a', events: [event('Noted')], expectedRevision: 0n },
          { stream: 'order-t1-b', events: [event('Opened'), event('Noted')], expectedRevision: 'no_stream' },
        ]);

        expect(results.map((r) => r.nextExpectedRevision)).toEqual([1n, 1n]);
        expect(results.every((r) => !r.duplicate)).toBe(true);
        expect(await collect(log.readStream('order-t1-b'))).toHaveLength(2);
        expect(results[1].position).toBe(await log.headPosition());
      });

      it('one failing expectation writes nothing of any request', async () => {
        await log.append('cart-t1-a', [event('Opened')], { expectedRevision: 'no_stream' });
        const head = await log.headPosition();

        const attempt = log.appendMany([
          { stream: 'order-t1-b', events: [event('Opened')], expectedRevision: 'no_stream' },
          { stream: 'cart-t1-c', events: [event('Opened')], expectedRevision: 'any' },
          { stream: 'cart-t1-a', events: [event('Noted')], expectedRevision: 'no_stream' },
        ]);

        await expect(attempt).rejects.toBeInstanceOf(WrongExpectedVersion);
        expect(await collect(log.readStream('order-t1-b'))).toHaveLength(0);
        expect(await collect(log.readStream('cart-t1-c'))).toHaveLength(0);
        expect(await log.headPosition()).toBe(head);
      });

      it('a deleted stream in the batch fails the whole batch', async () => {
        await log.deleteStream('cart-t1-gone');

        const attempt = log.appendMany([
          { stream: 'order-t1-b', events: [event('Opened')], expectedRevision: 'any' },
          { stream: 'cart-t1-gone', events: [event('Opened')], expectedRevision: 'any' },
        ]);

        await expect(attempt).rejects.toBeInstanceOf(StreamDeleted);
        expect(await collect(log.readStream('order-t1-b'))).toHaveLength(0);
      });

      it('retrying a whole batch writes nothing new and reports duplicates', async () => {
        const requests = [
          { stream: 'cart-t1-a', events: [event('Opened')], expectedRevision: 'no_stream' as const },
          { stream: 'order-t1-b', events: [event('Opened'), event('Noted')], expectedRevision: 'any' as const },
        ];
        const first = await log.appendMany(requests);

        const retry = await log.appendMany(requests);

        expect(retry).toEqual(first.map((r) => ({ ...r, duplicate: true })));
        expect(await collect(log.readAll())).toHaveLength(3);
      });

      it('events already stored in the stream are skipped and the rest appended', async () => {
        const seen = event('Derived', { n: 1 });
        await log.append('derived-t1-a', [seen], { expectedRevision: 'any' });
        const fresh = event('Derived', { n: 2 });

        const [result] = await log.appendMany([{ stream: 'derived-t1-a', events: [seen, fresh], expectedRevision: 'any' }]);

        expect(result).toMatchObject({ nextExpectedRevision: 1n, duplicate: false });
        expect((await collect(log.readStream('derived-t1-a'))).map((e) => e.id)).toEqual([seen.id, fresh.id]);
      });
    });

    describe('reading a stream', () => {
      beforeEach(async () => {
        await log.append('cart-t1-a', numbered(6), { expectedRevision: 'no_stream' });
        await log.append('cart-t1-other', numbered(2), { expectedRevision: 'no_stream' });
      });

      it('reads backwards from the end', async () => {
        const read = await collect(log.readStream('cart-t1-a', { direction: 'backwards' }));
        expect(read.map((e) => e.revision)).toEqual([5n, 4n, 3n, 2n, 1n, 0n]);
      });

      it('reads forwards from a revision, inclusive, up to maxCount', async () => {
        const read = await collect(log.readStream('cart-t1-a', { fromRevision: 2n, maxCount: 3 }));
        expect(read.map((e) => e.revision)).toEqual([2n, 3n, 4n]);
        expect(read.map((e) => e.data)).toEqual([{ n: 2 }, { n: 3 }, { n: 4 }]);
      });

      it('reads backwards from a revision, inclusive, up to maxCount', async () => {
        const read = await collect(log.readStream('cart-t1-a', { direction: 'backwards', fromRevision: 3n, maxCount: 2 }));
        expect(read.map((e) => e.revision)).toEqual([3n, 2n]);
      });

      it('reading forwards from the end or past the last revision yields nothing', async () => {
        expect(await collect(log.readStream('cart-t1-a', { fromRevision: 'end' }))).toEqual([]);
        expect(await collect(log.readStream('cart-t1-a', { fromRevision: 6n }))).toEqual([]);
      });

      it('a missing stream reads as empty', async () => {
        expect(await collect(log.readStream('cart-t1-missing'))).toEqual([]);
      });
    });

    describe('reading all', () => {
      let all: RecordedEvent[];

      beforeEach(async () => {
        await log.append('memory-t1-a', [event('MemoryRecorded'), event('MemoryTagged')], { expectedRevision: 'any' });
        await log.append('events-t1-x', [event('Observed')], { expectedRevision: 'any' });
        await log.append('memory-t2-b', [event('MemoryRecorded')], { expectedRevision: 'any' });
        await log.append('memory-t1-c', [event('MemoryRecorded')], { expectedRevision: 'any' });
        all = await collect(log.readAll());
      });

      it('reads every event in position order', async () => {
        expect(all.map((e) => e.streamId)).toEqual(['memory-t1-a', 'memory-t1-a', 'events-t1-x', 'memory-t2-b', 'memory-t1-c']);
      });

      it('resumes after a position, exclusively', async () => {
        const read = await collect(log.readAll({ fromPosition: all[1].position }));
        expect(read.map((e) => e.id)).toEqual(all.slice(2).map((e) => e.id));
      });

      it('reads backwards from the end and before a position', async () => {
        const fromEnd = await collect(log.readAll({ direction: 'backwards', maxCount: 2 }));
        expect(fromEnd.map((e) => e.id)).toEqual([all[4].id, all[3].id]);
        const before = await collect(log.readAll({ direction: 'backwards', fromPosition: all[2].position }));
        expect(before.map((e) => e.id)).toEqual([all[1].id, all[0].id]);
      });

      it('limits to maxCount', async () => {
        const read = await collect(log.readAll({ maxCount: 2 }));
        expect(read.map((e) => e.id)).toEqual([all[0].id, all[1].id]);
      });

      it('keeps only streams with one of the given prefixes', async () => {
        const read = await collect(log.readAll({ filter: { streamNamePrefix: ['memory-t1-', 'events-'] } }));
        expect(read.map((e) => e.streamId)).toEqual(['memory-t1-a', 'memory-t1-a', 'events-t1-x', 'memory-t1-c']);
      });

      it('keeps only the given event types', async () => {
        const read = await collect(log.readAll({ filter: { eventType: ['MemoryTagged', 'Observed'] } }));
        expect(read.map((e) => e.type)).toEqual(['MemoryTagged', 'Observed']);
      });

      it('combines prefix and type filters with a start position', async () => {
        const read = await collect(
          log.readAll({
            fromPosition: all[0].position,
            filter: { streamNamePrefix: ['memory-t1-'], eventType: ['MemoryRecorded'] },
          }),
        );
        expect(read.map((e) => e.id)).toEqual([all[4].id]);
      });
    });

    describe('catch-up subscriptions', () => {
      it('replays history from the start, then delivers live appends', async () => {
        await log.append('cart-t1-a', numbered(3), { expectedRevision: 'any' });
        const reader = read(log.subscribeToAll({ fromPosition: 'start' }));

        const history = await reader.events(3);
        await log.append('cart-t1-b', numbered(2), { expectedRevision: 'any' });
        const live = await reader.events(2);
        await reader.close();

        expect(history.map((e) => e.data)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
        expect(live.map((e) => e.streamId)).toEqual(['cart-t1-b', 'cart-t1-b']);
      });

      it('catches up through a long history in position order, each event once', async () => {
        const history = numbered(1_300);
        await log.append('cart-t1-a', history.slice(0, 700), { expectedRevision: 'any' });
        await log.append('cart-t1-b', history.slice(700), { expectedRevision: 'any' });
        const reader = read(log.subscribeToAll({ fromPosition: 'start' }));

        const delivered = await reader.events(1_300);
        const extra = await reader.eventsWithin(100);
        await reader.close();

        expect(delivered.map((e) => e.id)).toEqual(history.map((e) => e.id));
        expect(extra).toEqual([]);
      });

      it('from the end delivers only events appended after subscribing', async () => {
        await log.append('cart-t1-a', numbered(3), { expectedRevision: 'any' });
        const reader = read(log.subscribeToAll({ fromPosition: 'end' }));
        const fresh = event('Noted');

        await log.append('cart-t1-a', [fresh], { expectedRevision: 'any' });
        const [first] = await reader.events(1);
        await reader.close();

        expect(first.id).toBe(fresh.id);
      });

      it('resuming from a checkpoint delivers every later event exactly once', async () => {
        const before = numbered(5);
        await log.append('cart-t1-a', before, { expectedRevision: 'any' });
        const first = read(log.subscribeToAll({ fromPosition: 'start' }));
        await first.events(5);
        const checkpoint = await first.checkpoint();
        await first.close();

        const after = numbered(4, 5);
        await log.append('cart-t1-a', after.slice(0, 2), { expectedRevision: 'any' });
        const resumed = read(log.subscribeToAll({ fromPosition: checkpoint }));
        const caughtUp = await resumed.events(2);
        await log.append('cart-t1-a', after.slice(2), { expectedRevision: 'any' });
        const live = await resumed.events(2);
        const extra = await resumed.eventsWithin(150);
        await resumed.close();

        expect(checkpoint).toBe(await positionOf(log, before[4].id));
        expect([...caughtUp, ...live].map((e) => e.id)).toEqual(after.map((e) => e.id));
        expect(extra).toEqual([]);
      });

      // The guarantee is ~50 ms; the bound leaves room for a loaded CI machine and still catches a slow poll.
      it('a live subscriber sees a new append within 250 ms', async () => {
        const reader = read(log.subscribeToAll({ fromPosition: 'start' }));
        await reader.eventsWithin(60); // let it catch up and go idle

        const started = performance.now();
        await log.append('cart-t1-a', [event('Noted')], { expectedRevision: 'any' });
        await reader.events(1);
        const elapsed = performance.now() - started;
        await reader.close();

        expect(elapsed).toBeLessThan(250);
      });

      it('a filtered subscription yields checkpoints past the events it filtered out', async () => {
        await log.append('memory-t1-a', [event('MemoryRecorded')], { expectedRevision: 'any' });
        await log.append('events-t1-x', numbered(3), { expectedRevision: 'any' });
        const head = await log.headPosition();
        const reader = read(log.subscribeToAll({ fromPosition: 'start', filter: { streamNamePrefix: ['memory-'] } }));

        const [only] = await reader.events(1);
        const checkpoint = await reader.checkpoint(head);
        await reader.close();

        expect(only.streamId).toBe('memory-t1-a');
        expect(checkpoint).toBe(head);
      });

      it('applies type filters to live events too', async () => {
        const reader = read(log.subscribeToAll({ fromPosition: 'end', filter: { eventType: ['Wanted'] } }));

        await log.append('cart-t1-a', [event('Unwanted'), event('Wanted'), event('Unwanted')], { expectedRevision: 'any' });
        const [wanted] = await reader.events(1);
        const extra = await reader.eventsWithin(100);
        await reader.close();

        expect(wanted.type).toBe('Wanted');
        expect(extra).toEqual([]);
      });

      it('unsubscribe ends the iteration', async () => {
        const subscription = log.subscribeToAll({ fromPosition: 'start' });
        const drained = (async () => {
          const items: SubscriptionItem[] = [];
          for await (const item of subscription) items.push(item);
          return items;
        })();
        await sleep(50);

        await subscription.unsubscribe();

        await expect(withTimeout(drained, 1_000)).resolves.toEqual([]);
      });
    });

    describe('hard delete', () => {
      it('a deleted stream reads as empty and rejects appends of every kind', async () => {
        await log.append('memory-t1-a', numbered(3), { expectedRevision: 'no_stream' });

        await log.deleteStream('memory-t1-a');

        expect(await collect(log.readStream('memory-t1-a'))).toEqual([]);
        expect(await collect(log.readAll({ filter: { streamNamePrefix: ['memory-t1-a'] } }))).toEqual([]);
        for (const expectedRevision of ['no_stream', 'any', 'stream_exists', 2n] as const) {
          const attempt = log.append('memory-t1-a', [event('Noted')], { expectedRevision });
          await expect(attempt).rejects.toMatchObject({ code: 'EVENT_LOG.STREAM_DELETED' });
        }
      });

      it('deleting is idempotent and leaves other streams intact', async () => {
        await log.append('memory-t1-a', numbered(2), { expectedRevision: 'no_stream' });
        await log.append('memory-t1-b', numbered(2), { expectedRevision: 'no_stream' });
        const kept = await collect(log.readStream('memory-t1-b'));

        await log.deleteStream('memory-t1-a');
        await log.deleteStream('memory-t1-a');

        expect(await collect(log.readStream('memory-t1-b'))).toEqual(kept);
        expect((await collect(log.readAll())).map((e) => e.streamId)).toEqual(['memory-t1-b', 'memory-t1-b']);
      });

      it('deleting a batch of streams deletes each of them, idempotently, and leaves the others intact', async () => {
        for (const name of ['memory-t1-a', 'memory-t1-b', 'memory-t1-c'])
          await log.append(name, numbered(2), { expectedRevision: 'no_stream' });
        const kept = await collect(log.readStream('memory-t1-b'));

        await log.deleteStreams([]);
        await log.deleteStreams(['memory-t1-a', 'memory-t1-c', 'memory-t1-never']);
        await log.deleteStreams(['memory-t1-a', 'memory-t1-c']);

        expect(await collect(log.readStream('memory-t1-a'))).toEqual([]);
        expect(await collect(log.readStream('memory-t1-b'))).toEqual(kept);
        expect((await collect(log.readAll())).map((e) => e.streamId)).toEqual(['memory-t1-b', 'memory-t1-b']);
        for (const name of ['memory-t1-c', 'memory-t1-never']) {
          await expect(log.append(name, [event('Noted')], { expectedRevision: 'any' })).rejects.toBeInstanceOf(StreamDeleted);
        }
      });

      it('the name of a deleted stream can never be used again, even if it was never written', async () => {
        await log.deleteStream('memory-t1-never');

        const attempt = log.append('memory-t1-never', [event('Noted')], { expectedRevision: 'no_stream' });

        await expect(attempt).rejects.toBeInstanceOf(StreamDeleted);
      });

      it('positions keep increasing after the newest stream is deleted', async () => {
        await log.append('memory-t1-a', numbered(2), { expectedRevision: 'no_stream' });
        const head = await log.headPosition();
        await log.deleteStream('memory-t1-a');

        const result = await log.append('memory-t1-b', [event('Noted')], { expectedRevision: 'no_stream' });

        expect(result.position).toBeGreaterThan(head);
      });
    });
  });
}

function event(type: string, data: unknown = {}): EventData {
  return { id: randomUUID(), type, data };
}

function numbered(count: number, from = 0): EventData[] {
  return Array.from({ length: count }, (_, i) => event('Noted', { n: from + i }));
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

async function positionOf(log: EventLog, id: string): Promise<bigint | undefined> {
  return (await collect(log.readAll())).find((e) => e.id === id)?.position;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const timedOut = Symbol('timed out');

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | typeof timedOut> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof timedOut>((resolve) => {
    timer = setTimeout(() => resolve(timedOut), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Pulls items from a subscription with deadlines. A pending `next()` that
 * outlives a deadline is kept and consumed by the following call, so nothing
 * is skipped between calls.
 */
function read(subscription: Subscription) {
  const iterator = subscription[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<SubscriptionItem>> | undefined;

  async function pull(deadline: number): Promise<SubscriptionItem | undefined> {
    pending ??= iterator.next();
    const result = await withTimeout(pending, Math.max(0, deadline - Date.now()));
    if (result === timedOut) return undefined;
    pending = undefined;
    if (result.done) throw new Error('subscription ended unexpectedly');
    return result.value;
  }

  return {
    /** The next `count` events; checkpoints in between are skipped. Fails after 2 s. */
    async events(count: number): Promise<RecordedEvent[]> {
      const deadline = Date.now() + 2_000;
      const events: RecordedEvent[] = [];
      while (events.length < count) {
        const item = await pull(deadline);
        if (!item) throw new Error(`expected ${count} events within 2 s, got ${events.length}`);
        if (item.kind === 'event') events.push(item.event);
      }
      return events;
    },
    /** Every event that arrives within `ms`. */
    async eventsWithin(ms: number): Promise<RecordedEvent[]> {
      const deadline = Date.now() + ms;
      const events: RecordedEvent[] = [];
      for (let item = await pull(deadline); item; item = await pull(deadline)) {
        if (item.kind === 'event') events.push(item.event);
      }
      return events;
    },
    /** The next checkpoint (at least `atLeast`); events in between fail the test. */
    async checkpoint(atLeast?: bigint): Promise<bigint> {
      const deadline = Date.now() + 2_000;
      for (;;) {
        const item = await pull(deadline);
        if (!item) throw new Error('expected a checkpoint within 2 s');
        if (item.kind === 'event') throw new Error(`expected a checkpoint, got event ${item.event.id}`);
        if (atLeast === undefined || item.position >= atLeast) return item.position;
      }
    },
    async close(): Promise<void> {
      await subscription.unsubscribe();
    },
  };
}
