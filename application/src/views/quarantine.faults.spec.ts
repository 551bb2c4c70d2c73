import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { killChild, runChild, startChild } from '@elma/shared/testing';

const child = new URL('./testing/elma.child.ts', import.meta.url);

describe('one tenant with a corrupt index file', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'elma-corrupt-tenant-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('does not stop indexing for the others: health names it, recall for it answers 503-coded, and a rebuild restores it from the log', async () => {
    // Given a process that indexed two tenants and stopped,
    expect(runChild(child, ['index', dir], 120_000)).toMatchObject({ status: 0, stdout: 'indexed\n' });
    // and beta's index file overwritten at its header (a bad disk, a stray write),
    const fd = openSync(join(dir, 'index', 'tenant-beta.db'), 'r+');
    writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 0);
    closeSync(fd);

    // when a new process starts on the folder and both tenants write again,
    const second = await startChild(child, ['resume', dir], /^report /, 120_000);
    try {
      const { before, after } = JSON.parse(second.line.slice('report '.length)) as {
        before: { caughtUp: boolean; acme: number; index: unknown; recallBeta: string };
        after: { rebuildMs: number; beta: number; index: unknown; recallBeta: boolean };
      };
      // then acme's events are all indexed, health names beta, and a recall for beta gets the stable code,
      expect(before).toEqual({
        caughtUp: true,
        acme: 50,
        index: { engine: 'sqlite', up: true, degraded: true, detail: { quarantinedTenants: ['beta'] } },
        recallBeta: 'INDEX.PARTITION_CORRUPT',
      });
      // and a rebuild of beta drops the damaged file without reading it, replays all 50 events and lifts the quarantine.
      expect(after).toMatchObject({ beta: 50, index: { engine: 'sqlite', up: true }, recallBeta: true });
      expect(after.index).not.toHaveProperty('degraded');
      expect(after.rebuildMs).toBeLessThan(20_000);
    } finally {
      await killChild(second.child);
    }
  });
});
