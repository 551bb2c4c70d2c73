import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, loadDataPaths } from './config';

describe('the erasure ledger path and loadDataPaths', () => {
  it('defaults the ledger into the data folder, or takes ELMA_ERASURE_LEDGER', () => {
    expect(loadConfig({ ELMA_DATA_DIR: '/srv/elma', ELMA_MASTER_KEY: 'a'.repeat(64), ELMA_JWT_SECRET: 'b'.repeat(64) }).erasureLedger).toBe(
      '/srv/elma/erasure-ledger.db',
    );
    expect(loadDataPaths({ ELMA_DATA_DIR: '/srv/elma', ELMA_ERASURE_LEDGER: '/ledger/erasures.db' })).toEqual({
      dataDir: '/srv/elma',
      erasureLedger: '/ledger/erasures.db',
      temporalDbFile: '/srv/elma/temporal.db',
    });
  });

  it('creates no secret in the folder (a restore must not find a new master key there)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-paths-'));
    try {
      loadDataPaths({ ELMA_DATA_DIR: dir });
      expect(existsSync(join(dir, 'master.key'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
