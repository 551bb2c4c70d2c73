import type { EventLog, ReadStreamOptions, RecordedEvent } from '@elma/domain';

/** The real log, counting the stream reads that go through it (for tests that assert how often a stream is read). */
export function countingReads(log: EventLog): { log: EventLog; reads: (stream?: string) => number; reset(): void } {
  const counts: string[] = [];
  const counted: EventLog = Object.create(log);
  counted.readStream = (stream: string, options?: ReadStreamOptions): AsyncIterable<RecordedEvent> => {
    counts.push(stream);
    return log.readStream(stream, options);
  };
  return {
    log: counted,
    reads: (stream) => (stream === undefined ? counts.length : counts.filter((s) => s === stream).length),
    reset: () => void counts.splice(0),
  };
}
