import { describe, expect, it } from 'vitest';
import type { Logger } from '@elma/shared';
import { toProblem } from './problem';
import { serverErrorLog } from './server-errors';

const recording = () => {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const logger: Logger = {
    info: (message, fields) => lines.push({ level: 'info', message, fields }),
    warn: (message, fields) => lines.push({ level: 'warn', message, fields }),
    error: (message, fields) => lines.push({ level: 'error', message, fields }),
  };
  return { lines, logger };
};

const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });

describe('the server error log', () => {
  it('writes one warning per known state and interval, then says how many it passed over', () => {
    const { lines, logger } = recording();
    let clock = 0;
    const log = serverErrorLog(logger, 10_000, () => clock);
    for (let i = 0; i < 500; i++) log(toProblem(full), { requestId: `r${i}` });
    clock = 10_001;
    log(toProblem(full), { requestId: 'late' });
    expect(lines).toHaveLength(2);
    expect(lines.map((l) => [l.level, l.fields?.code])).toEqual([
      ['warn', 'STORAGE.FULL'],
      ['warn', 'STORAGE.FULL'],
    ]);
    expect(lines[1].fields?.passedOverSinceLast).toBe(499);
  });

  it('writes every unexpected error', () => {
    const { lines, logger } = recording();
    const log = serverErrorLog(logger);
    for (let i = 0; i < 3; i++) log(toProblem(new TypeError('boom')), { requestId: `r${i}` });
    expect(lines.map((l) => l.level)).toEqual(['error', 'error', 'error']);
  });
});
