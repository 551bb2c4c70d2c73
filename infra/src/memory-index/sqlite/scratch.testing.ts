import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { SqliteMemoryIndex } from './sqlite-memory-index';

/** A fresh folder per test for an embedded index; the index a test leaves open is closed and the folder removed after it. */
export function scratchIndex(name: string): { dir: string; index?: SqliteMemoryIndex } {
  const scratch: { dir: string; index?: SqliteMemoryIndex } = { dir: '' };
  beforeEach(() => {
    scratch.dir = mkdtempSync(join(tmpdir(), `elma-${name}-`));
  });
  afterEach(async () => {
    await scratch.index?.close();
    scratch.index = undefined;
    rmSync(scratch.dir, { recursive: true, force: true });
  });
  return scratch;
}
