// CI reads a test runner's closing line to tell whether tests ran: pytest's `=== 3 passed in 1.2s ===`, and
// its `=== 2 warnings in 90.18s ===` when nothing passed or failed, which reads as "no test executed".
// Schemathesis closes with that pytest shape, although it counts operations, not tests. Its output passes
// through here so the fuzz stage's own count (`fuzz result: …`) is the only closing count it prints.

/** pytest's closing banner: `=` runs around a summary ending in a duration. */
const PYTEST_BANNER = /^=+ (.*\bin [\d.]+s(?: \([^)]*\))?) =+$/;

/** The line as printed, or a pytest-shaped closing banner as a plain `schemathesis summary:` line. */
export function withoutRunnerClosingLine(line: string): string {
  const banner = PYTEST_BANNER.exec(line.trimEnd());
  return banner ? `schemathesis summary: ${banner[1]}` : line;
}

/** Splits a stream's chunks into whole lines, passing each through `map`; `end()` flushes a last unterminated line. */
export function lineMapper(map: (line: string) => string, write: (text: string) => void) {
  let pending = '';
  return {
    push(chunk: string) {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) write(`${map(line)}\n`);
    },
    end() {
      if (pending) write(map(pending));
      pending = '';
    },
  };
}
