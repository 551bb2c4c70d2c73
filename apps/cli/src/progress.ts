/**
 * Progress of long CLI work (rebuild, eval, bench, an erasure followed with --wait), always on stderr so
 * that stdout keeps only the command's data (JSON, tables) and can be piped. On a terminal it is one line
 * redrawn in place; elsewhere (CI logs, a file) a plain line now and then, so a log is not flooded.
 */

export interface ProgressStream {
  write(text: string): unknown;
  /** True on a terminal (Node sets it on process.stderr). */
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressOptions {
  /** What is being done, e.g. `rebuild acme`. */
  label: string;
  /** Units of work in all, when known: the line then shows a percentage. */
  total?: number;
  /** Unit name for the counts, e.g. `events` (default none). */
  unit?: string;
  stream?: ProgressStream;
  /** Milliseconds, monotonic. */
  now?: () => number;
  /** Least time between two plain lines (not a TTY); default 10 s. */
  plainEveryMs?: number;
}

export interface Progress {
  /** Work done so far, and what is happening now (a stage, a step), when there is something to say. */
  update(done: number, detail?: string): void;
  /** Only the detail changed (a stage with no count). */
  note(detail: string): void;
  /** A line of its own (a result, a warning), kept above the progress line on a terminal. */
  log(line: string): void;
  /** The last line: the final count and the time taken. On a TTY it ends the redrawn line. */
  finish(detail?: string): void;
}

// A terminal is redrawn at most this often: faster is flicker, and costs more than the work on small steps.
const TTY_EVERY_MS = 100;
const DEFAULT_PLAIN_EVERY_MS = 10_000;

export function startProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  const now = options.now ?? (() => performance.now());
  const tty = stream.isTTY === true;
  const every = tty ? TTY_EVERY_MS : (options.plainEveryMs ?? DEFAULT_PLAIN_EVERY_MS);
  const started = now();
  let done = 0;
  let detail: string | undefined;
  let lastShown: number | undefined;
  let lastState = '';
  let finished = false;

  const state = () => ({ label: options.label, done, total: options.total, unit: options.unit, detail });
  const text = () => progressLine({ ...state(), elapsedMs: now() - started });
  const show = (force: boolean) => {
    const at = now();
    if (!force && lastShown !== undefined && at - lastShown < every) return;
    // A plain log gets a new line only when something changed; a terminal line is redrawn for the clock too.
    const shownState = progressLine(state());
    if (!tty && !force && shownState === lastState) return;
    lastShown = at;
    lastState = shownState;
    const line = text();
    if (tty) {
      const width = Math.max(20, (stream.columns ?? 80) - 1);
      stream.write(`\r${line.length > width ? `${line.slice(0, width - 1)}…` : line}\u001b[K`);
    } else {
      stream.write(`${line}\n`);
    }
  };

  show(true);
  return {
    update(count, next) {
      if (finished) return;
      done = count;
      if (next !== undefined) detail = next;
      show(false);
    },
    note(next) {
      if (finished) return;
      const changed = next !== detail;
      detail = next;
      // A new stage is worth a line of its own even in a log; the same one again waits for its turn.
      show(changed && !tty);
    },
    log(line) {
      if (tty && !finished) {
        stream.write(`\r\u001b[K${line}\n`);
        lastShown = undefined;
        show(true);
      } else {
        stream.write(`${line}\n`);
      }
    },
    finish(last) {
      if (finished) return;
      finished = true;
      if (last !== undefined) detail = last;
      const line = text();
      stream.write(tty ? `\r${line}\u001b[K\n` : `${line}\n`);
    },
  };
}

/** `label: 1,234/5,000 events (24.7 %) · replaying · 1m 05s`: pure, for the helper and its tests. */
export function progressLine(state: {
  label: string;
  done: number;
  total?: number;
  unit?: string;
  detail?: string;
  /** Left out: the line without its clock. */
  elapsedMs?: number;
}): string {
  const parts: string[] = [];
  if (state.total !== undefined && state.total > 0) {
    const percent = Math.min(100, (state.done / state.total) * 100);
    parts.push(`${count(state.done)}/${count(state.total)}${state.unit ? ` ${state.unit}` : ''} (${percent.toFixed(1)} %)`);
  } else if (state.done > 0) {
    parts.push(`${count(state.done)}${state.unit ? ` ${state.unit}` : ''}`);
  }
  if (state.detail) parts.push(state.detail);
  if (state.elapsedMs !== undefined) parts.push(elapsed(state.elapsedMs));
  return `${state.label}: ${parts.join(' · ')}`;
}

const count = (n: number) => n.toLocaleString('en-US');

function elapsed(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}
