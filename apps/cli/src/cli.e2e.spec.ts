import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { elmaArgs } from '../../../tests/support/elma-process';

const COMMANDS = [
  'start',
  'api',
  'token',
  'rebuild',
  'worker',
  'tenants',
  'verify-certificate',
  'backup',
  'restore',
  'audit',
  'erasure',
  'erasures',
  'bench',
  'bench-peers',
  'eval',
  'eval-locomo',
  'eval-bilingual',
  'mcp',
];

// As a user types it (`npx elma`: the current build, else the sources); build.e2e checks that both print the same.
describe('elma <command> --help', () => {
  const parent = mkdtempSync(join(tmpdir(), 'elma-help-'));
  // A folder that does not exist yet: any command that started anything would create it.
  const dataDir = join(parent, 'data');
  const env = { ...process.env, ELMA_DATA_DIR: dataDir, ELMA_PORT: '1', TEMPORAL_ADDRESS: '' };
  afterAll(() => rmSync(parent, { recursive: true, force: true }));

  it.each(COMMANDS)('`elma %s --help` prints its usage and exits 0, starting nothing', (command) => {
    const result = spawnSync(process.execPath, elmaArgs(command, '--help'), { env, encoding: 'utf8', timeout: 30_000 });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain(`usage: elma ${command}`);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('lists every command, with a pointer to per-command help', () => {
    const result = spawnSync(process.execPath, elmaArgs('--help'), { env, encoding: 'utf8', timeout: 30_000 });
    expect(result.status).toBe(0);
    for (const command of COMMANDS) expect(result.stdout).toContain(`  ${command}`);
    expect(result.stdout).toContain('--help');
  });
});
