import { describe, expect, it } from 'vitest';
import { progressLine, startProgress } from './progress';

/** A stream that keeps what was written, and a clock the test moves. */
function setup(tty: boolean) {
  const writes: string[] = [];
  let now = 0;
  const stream = { isTTY: tty, columns: 200, write: (text: string) => writes.push(text) };
  return { writes, stream, tick: (ms: number) => (now += ms), now: () => now };
}

describe('the progress line', () => {
  it('shows counts, percentage, what is happening and the time taken', () => {
    expect(progressLine({ label: 'eval', done: 3, total: 12, unit: 'runs', detail: 'W1 seed 1 ELMA', elapsedMs: 65_000 })).toBe(
      'eval: 3/12 runs (25.0 %) · W1 seed 1 ELMA · 1m 05s',
    );
    expect(progressLine({ label: 'rebuild acme', done: 0, detail: 'replaying', elapsedMs: 4_200 })).toBe('rebuild acme: replaying · 4s');
    expect(progressLine({ label: 'bench', done: 12_000, total: 100_000, unit: 'events', elapsedMs: 3_700_000 })).toBe(
      'bench: 12,000/100,000 events (12.0 %) · 1h 01m',
    );
  });
});

describe('progress on a terminal', () => {
  it('redraws one line in place, at most every 100 ms, and ends it with a newline', () => {
    // Given a terminal
    const { writes, stream, tick, now } = setup(true);
    const progress = startProgress({ label: 'bench', total: 4, unit: 'batches', stream, now });
    // When work is reported faster than the redraw interval
    progress.update(1);
    tick(50);
    progress.update(2);
    tick(60);
    progress.update(3);
    progress.finish();
    // Then each redraw returns to the line start and clears it, and only the last write ends the line
    expect(writes).toEqual([
      '\rbench: 0/4 batches (0.0 %) · 0s\u001b[K',
      '\rbench: 3/4 batches (75.0 %) · 0s\u001b[K',
      '\rbench: 3/4 batches (75.0 %) · 0s\u001b[K\n',
    ]);
  });

  it('keeps a logged line above the progress line', () => {
    const { writes, stream, now } = setup(true);
    const progress = startProgress({ label: 'eval', total: 2, stream, now });
    progress.log('[eval] W1 seed 1 B3: error: timeout');
    expect(writes.slice(1)).toEqual(['\r\u001b[K[eval] W1 seed 1 B3: error: timeout\n', '\reval: 0/2 (0.0 %) · 0s\u001b[K']);
  });
});

describe('progress in a log (not a terminal)', () => {
  it('writes plain lines, no more often than the interval, and a line for each new stage', () => {
    // Given stderr going to a file
    const { writes, stream, tick, now } = setup(false);
    const progress = startProgress({ label: 'rebuild acme', stream, now, plainEveryMs: 10_000 });
    // When stages change and time passes
    progress.note('dropping');
    tick(1_000);
    progress.note('dropping');
    progress.note('replaying');
    tick(30_000);
    progress.note('replaying');
    progress.finish('done');
    // Then: no carriage returns, a line per change, none for a stage seen again, a last line with the outcome
    expect(writes).toEqual([
      'rebuild acme: 0s\n',
      'rebuild acme: dropping · 0s\n',
      'rebuild acme: replaying · 1s\n',
      'rebuild acme: done · 31s\n',
    ]);
  });

  it('reports counts at most once per interval', () => {
    const { writes, stream, tick, now } = setup(false);
    const progress = startProgress({ label: 'bench', total: 100, stream, now, plainEveryMs: 10_000 });
    for (let i = 1; i <= 100; i++) {
      tick(500);
      progress.update(i);
    }
    progress.finish();
    // 50 s of work: the first line, one each 10 s, and the last.
    expect(writes).toEqual([
      'bench: 0/100 (0.0 %) · 0s\n',
      'bench: 20/100 (20.0 %) · 10s\n',
      'bench: 40/100 (40.0 %) · 20s\n',
      'bench: 60/100 (60.0 %) · 30s\n',
      'bench: 80/100 (80.0 %) · 40s\n',
      'bench: 100/100 (100.0 %) · 50s\n',
      'bench: 100/100 (100.0 %) · 50s\n',
    ]);
  });
});
