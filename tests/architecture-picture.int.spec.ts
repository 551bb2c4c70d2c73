import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The package picture in docs/architecture.md is the Nx project graph: an edge added to or dropped from a
 * package.json without redrawing it (`npx tsx scripts/docs/package-graph.ts --write`) fails here.
 */
describe('the architecture picture', () => {
  it('has exactly the edges of the Nx project graph', () => {
    const root = join(import.meta.dirname, '..');
    const check = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/docs/package-graph.ts', '--check'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, NX_DAEMON: 'false' },
    });
    expect(check.stdout + check.stderr).toMatch(/matches the Nx project graph \(\d+ edges\)/);
    expect(check.status).toBe(0);
  }, 120_000);
});
