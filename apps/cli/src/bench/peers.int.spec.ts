import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PEERS, SYSTEM_NAMES, peersBench } from './peers';

/**
 * `npm run bench:peers` end to end at a tiny size, not timed: ELMA, the real Mem0 package on FAISS and LangGraph's
 * real SqliteStore each take the corpus and answer the queries. Needs the peers' Python packages (scripts/ensure-mem0.mjs,
 * scripts/ensure-langgraph.mjs, which `npm run test:eval` runs first): one of the eval suites, not `npm test`.
 */
describe('bench:peers harness', () => {
  const dir = mkdtempSync(join(tmpdir(), 'elma-peers-spec-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs every system on the same corpus; each returns results, and finds a stored text when asked for it', async () => {
    const report = await peersBench(
      dir,
      { ...DEFAULT_PEERS, sizes: [150, 200], queries: 20, warmup: 2, addSample: 40, batch: 20 },
      () => undefined,
    );

    expect(report.notRun).toEqual([]);
    expect(report.rows.map((row) => `${row.size} ${row.system}`)).toEqual(
      [150, 200].flatMap((size) => SYSTEM_NAMES.map((system) => `${size} ${system}`)),
    );
    for (const row of report.rows) {
      expect(row.foundStoredText, `${row.system} at ${row.size}`).toBe(true);
      expect(row.resultsPerQuery, `${row.system} at ${row.size}`).toBeGreaterThan(0);
      expect(Number.isFinite(row.addPerSecond) && row.addPerSecond > 0, `${row.system} add/s`).toBe(true);
      expect(row.p95, `${row.system} p95`).toBeGreaterThanOrEqual(row.p50);
    }
  });
});
