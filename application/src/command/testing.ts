import type { EventLog, ReadStreamOptions, RecordedEvent } from '@elma/domain';

/**
 * Counts the stream reads that go through this (real) log, for tests that
 * assert how often a stream is read. Wraps `readStream` on the instance, so
 * every service already holding the log is counted; `restore` unwraps it.
 */
export function countStreamReads(log: EventLog): { reads: (stream?: string) => number; reset(): void; restore(): void } {
  const counts: string[] = [];
  const own = Object.prototype.hasOwnProperty.call(log, 'readStream');
  const original = log.readStream;
  log.readStream = (stream: string, options?: ReadStreamOptions): AsyncIterable<RecordedEvent> => {
    counts.push(stream);
    return original.call(log, stream, options);
  };
  return {
    reads: (stream) => (stream === undefined ? counts.length : counts.filter((s) => s === stream).length),
    reset: () => void counts.splice(0),
    restore: () => {
      if (own) log.readStream = original;
      else delete (log as Partial<EventLog>).readStream;
    },
  };
}
