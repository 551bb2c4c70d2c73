import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { embed } from '../fixtures';
import { killChild, runChild, startChild } from '@elma/shared/testing';

const VICTIM_TEXT = 'Patient ZQXMARKER9731 was diagnosed with 糖尿病 in March.';

/** Every file of the folder holding one of the needles, by name. */
function filesContaining(dir: string, needles: Buffer[]): string[] {
  return readdirSync(dir).filter((file) => {
    const bytes = readFileSync(join(dir, file));
    return needles.some((needle) => bytes.includes(needle));
  });
}

describe('a purge killed midway', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'elma-purge-kill-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is completed by a retry in a fresh process: no plaintext or vector of the record in any tenant file, the WAL included', async () => {
    const vector = embed(VICTIM_TEXT);
    const needles = [
      Buffer.from('ZQXMARKER9731'),
      Buffer.from('zqxmarker9731'),
      Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength),
    ];

    // Given a purge killed (kill -9) after its row deletion committed and before the WAL checkpoint,
    const killed = runChild(new URL('./testing/purge.child.ts', import.meta.url), ['kill-mid-purge', dir]);
    expect(killed.signal).toBe('SIGKILL');
    // with the record's plaintext still in the WAL's older frames,
    expect(filesContaining(dir, needles)).toContain('tenant-acme.db-wal');

    // when the purge is retried in a fresh process,
    const { child, line } = await startChild(new URL('./testing/purge.child.ts', import.meta.url), ['retry', dir], /^purged /);
    try {
      // then, while that process still holds the files, none of them carries the record.
      expect(line).toBe('purged 300');
      expect(filesContaining(dir, needles)).toEqual([]);
    } finally {
      await killChild(child);
    }
  });
});
