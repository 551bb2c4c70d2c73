import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { toProblem } from './problem';

/** The error a real write to /dev/full raises: ENOSPC from the kernel, as on a full volume. */
function enospcFromTheKernel(): unknown {
  try {
    writeFileSync('/dev/full', 'x');
  } catch (error) {
    return error;
  }
  throw new Error('/dev/full accepted a write');
}

describe('a full volume as the caller sees it', () => {
  it('answers 507 STORAGE.FULL when SQLite reports the database or disk full', () => {
    const problem = toProblem(new Database.SqliteError('database or disk is full', 'SQLITE_FULL'), '/v1/events', 'req-1');
    expect(problem).toMatchObject({ status: 507, code: 'STORAGE.FULL', instance: '/v1/events', requestId: 'req-1' });
  });

  it.runIf(process.platform === 'linux')('answers 507 STORAGE.FULL when a file write fails with ENOSPC', () => {
    const error = enospcFromTheKernel();
    expect((error as { code?: string }).code).toBe('ENOSPC');
    expect(toProblem(error)).toMatchObject({ status: 507, code: 'STORAGE.FULL' });
  });

  it('recognises a full volume behind a wrapper that kept the original as its cause', () => {
    const wrapped = new Error('could not persist the graph', {
      cause: new Database.SqliteError('database or disk is full', 'SQLITE_FULL'),
    });
    expect(toProblem(wrapped).code).toBe('STORAGE.FULL');
  });

  it('keeps other storage failures a generic 500 whose detail names no path or content', () => {
    const problem = toProblem(new Database.SqliteError('disk I/O error: /data/tenant-acme.db', 'SQLITE_IOERR_READ'));
    expect(problem).toMatchObject({ status: 500, code: 'SERVER.INTERNAL' });
    expect(problem.detail).not.toContain('/data');
  });

  it('tells the caller to retry once space is freed, not to wait for a restart', () => {
    const { detail } = toProblem(new Database.SqliteError('database or disk is full', 'SQLITE_FULL'));
    expect(detail).toMatch(/not completed/);
    expect(detail).toMatch(/retry .*freed space/);
  });
});
