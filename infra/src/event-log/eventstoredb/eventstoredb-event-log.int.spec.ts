import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventLogContract } from '../contract';
import { EventStoreDbCheckpointStore } from './checkpoint-store';
import { EventStoreDbEventLog } from './eventstoredb-event-log';
import { EventStoreDbScavenger } from './scavenge';

const url = process.env.ELMA_EVENTSTORE_URL;

/** Each case gets a namespace of its own on the shared server: an empty log as far as it can see. */
async function open(): Promise<EventStoreDbEventLog> {
  return EventStoreDbEventLog.open({ url: url!, namespace: `t${randomUUID().replaceAll('-', '')}.`, idleCheckpointMs: 50 });
}

describe('EventStoreDB adapter without a server', () => {
  it('fails to open at once with a clear error that names no credentials', async () => {
    const attempt = EventStoreDbEventLog.open({ url: 'esdb://admin:s3cret@127.0.0.1:1?tls=false' });

    await expect(attempt).rejects.toThrow(/^EventStoreDB at esdb:\/\/\*\*\*@127\.0\.0\.1:1\?tls=false did not answer/);
    await expect(attempt).rejects.not.toThrow(/s3cret/);
  });
});

if (url) {
  eventLogContract('EventStoreDB', async () => {
    const log = await open();
    return { log, cleanup: () => log.close() };
  });

  describe('EventStoreDB adapter', () => {
    it('keeps checkpoints in the log, newest only, invisible to readers', async () => {
      const log = await open();
      try {
        const checkpoints = new EventStoreDbCheckpointStore(log);
        expect(await checkpoints.load('views')).toBeUndefined();
        await checkpoints.save('views', 41n);
        await checkpoints.save('views', 42n);

        expect(await checkpoints.load('views')).toBe(42n);
        expect(await log.headPosition()).toBe(-1n);
      } finally {
        await log.close();
      }
    });

    it('requests a scavenge after a delete and reports on it', async () => {
      const log = await open();
      try {
        const since = new Date(Date.now() - 1_000);
        await log.append('memory-t1-a', [{ id: randomUUID(), type: 'Noted', data: {} }], { expectedRevision: 'no_stream' });
        await log.deleteStream('memory-t1-a');
        const scavenger = new EventStoreDbScavenger(log);

        await scavenger.request();
        let report = await scavenger.report(since);
        for (let i = 0; i < 60 && !report.completed; i++) {
          await new Promise((resolve) => setTimeout(resolve, 500));
          report = await scavenger.report(since);
        }

        expect(report).toMatchObject({ engine: 'eventstoredb', method: 'scavenge', requested: true, completed: true, result: 'Success' });
      } finally {
        await log.close();
      }
    });
  });
} else {
  describe.skip('EventStoreDB contract (skipped: set ELMA_EVENTSTORE_URL=esdb://host:2113?tls=false to run it against a real server)', () => {
    it('needs a server', () => undefined);
  });
}
