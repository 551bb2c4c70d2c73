import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REDTEAM_DIR_ENV, addTallies, formatReport, type Tally } from '../apps/api/src/redteam/harness';

/**
 * Collects the red-team files' tallies (each leaves one JSON file in a folder named by ELMA_REDTEAM_DIR,
 * which the forked test workers inherit) and prints one report for the run: probes, leaks and 5xx by surface.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'elma-redteam-'));
  process.env[REDTEAM_DIR_ENV] = dir;
  return async () => {
    delete process.env[REDTEAM_DIR_ENV];
    const files = (await readdir(dir)).filter((name) => name.endsWith('.json')).sort();
    if (files.length > 0) {
      const run = new Map<string, Tally>();
      for (const name of files) addTallies(run, JSON.parse(await readFile(join(dir, name), 'utf8')) as Record<string, Tally>);
      process.stdout.write(`\n${formatReport(`red team, whole run (${files.map((f) => f.replace(/\.json$/, '')).join(', ')})`, run)}\n`);
    }
    await rm(dir, { recursive: true, force: true });
  };
}
