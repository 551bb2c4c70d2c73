import { describe, expect, it } from 'vitest';
import { flagRates, type ProbeScores } from './metrics';
import { ABLATION_ROWS, TABLE1_COLUMNS, TABLE1_ROWS, TABLE2_COLUMNS, buildReport, type ReportInput } from './report';
import type { RunResult } from './runner';
import { METRICS, median, pairedDelta, summarise } from './summary';
import { lineChart } from './svg';
import type { SystemSpec, Workload, WorkloadName } from './types';

/** A run with hand-set probe scores (what the metrics would have produced). */
function run(system: string, seed: number, workload: WorkloadName, probes: Partial<ProbeScores>[], budget = 600): RunResult {
  return {
    workload,
    seed,
    system,
    budget,
    probes: probes.map((scores, i) => ({
      id: `p${i}`,
      category: 'recall',
      lang: 'en',
      scores: { tokens: 100, ms: 10 + i, ...scores },
      failures: scores.unauthorised === 1 ? [{ metric: 'unauthorised', line: `[current] leaked canary ${i}` }] : [],
    })),
    events: 10,
    storageBytes: 1000 * seed,
    storagePerEvent: 100 * seed,
    p95Ms: 10 + probes.length,
    flags: {
      ...flagRates([], [], []),
      benignSteps: 10,
      benignFlagged: 1,
      poisonSteps: 2,
      poisonFlagged: 1,
      injectionSteps: 2,
      injectionFlagged: 2,
    },
    scan: { strings: 1, found: [] },
    seconds: 1,
  };
}

describe('statistics', () => {
  it('median of odd and even counts; none is an error', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(() => median([])).toThrow(RangeError);
  });

  it('summarise: the median over seeds of each seed mean, an interval around the pooled mean, the worst seed', () => {
    const runs = [1, 2, 3, 4, 5].map((seed) => run('X', seed, 'W1', [{ factRecall: seed <= 2 ? 0 : 1 }, { factRecall: 1 }]));
    const s = summarise(METRICS.factRecall, runs)!;
    expect(s.median).toBe(1);
    expect(s.worst).toBe(0.5);
    expect(s.seeds).toBe(5);
    expect(s.samples).toBe(10);
    expect(s.low).toBeLessThan(0.8);
    expect(s.high).toBeGreaterThanOrEqual(0.8);
    expect(summarise(METRICS.poisoned, runs)).toBeUndefined();
  });

  it('run-level metrics: storage is bytes over events per seed, flag false positives a ratio of counts', () => {
    const runs = [run('X', 1, 'W1', [{}]), run('X', 3, 'W1', [{}])];
    expect(summarise(METRICS.storage, runs)!.median).toBe(200);
    expect(summarise(METRICS.flagFp, runs)!.median).toBeCloseTo(0.1);
  });

  it('paired delta: pairs the same probes of both systems; a real difference excludes 0', () => {
    const elma = [1, 2, 3].map((seed) =>
      run(
        'ELMA',
        seed,
        'W1',
        Array.from({ length: 20 }, () => ({ factRecall: 1 })),
      ),
    );
    const ablated = [1, 2, 3].map((seed) =>
      run(
        'A7',
        seed,
        'W1',
        Array.from({ length: 20 }, (_, i) => ({ factRecall: i % 2 })),
      ),
    );
    const d = pairedDelta(METRICS.factRecall, ablated, elma)!;
    expect(d.mean).toBeCloseTo(-0.5);
    expect(d.high).toBeLessThan(0);
    expect(d.pairs).toBe(60);
    expect(pairedDelta(METRICS.poisoned, ablated, elma)).toBeUndefined();
  });
});

/** A minimal XML well-formedness check: balanced tags, quoted attributes, known entities only. */
function wellFormed(xml: string): boolean {
  const stack: string[] = [];
  const body = xml.replace(/^<\?xml[^?]*\?>/, '');
  if (/&(?!(amp|lt|gt|quot|apos);)/.test(body)) return false;
  for (const match of body.matchAll(/<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|<[^>]*>/g)) {
    if (!match[2]) return false;
    if (match[1]) {
      if (stack.pop() !== match[2]) return false;
    } else if (!match[4]) stack.push(match[2]);
  }
  return stack.length === 0;
}

describe('SVG writer', () => {
  it('writes well-formed XML with one circle per data point, names escaped', () => {
    const svg = lineChart({
      title: 'Recall <vs> budget & "cost"',
      xLabel: 'budget',
      yLabel: 'recall',
      yRange: [0, 1],
      series: [
        {
          name: 'B1 & co',
          points: [
            { x: 150, y: 0.2 },
            { x: 600, y: 0.7 },
          ],
        },
        { name: 'ELMA', points: [{ x: 150, y: 0.5, label: 'budget 150' }] },
      ],
    });
    expect(wellFormed(svg)).toBe(true);
    expect(svg.match(/<circle /g)).toHaveLength(3);
    expect(svg).toContain('data-x="600" data-y="0.7"');
    expect(svg).toContain('B1 &amp; co');
    expect(wellFormed('<svg><g></svg>')).toBe(false);
    expect(wellFormed('<svg>a & b</svg>')).toBe(false);
  });

  it('an empty chart is still well-formed', () => {
    expect(wellFormed(lineChart({ title: 't', xLabel: 'x', yLabel: 'y', series: [] }))).toBe(true);
  });
});

describe('report', () => {
  const ids = [...TABLE1_ROWS.filter((id) => !['B4', 'B6', 'B7'].includes(id)), ...ABLATION_ROWS];
  const specs: SystemSpec[] = [...TABLE1_ROWS, ...ABLATION_ROWS].map((id) => ({
    id,
    label: `${id} row`,
    ...(['B4', 'B6', 'B7'].includes(id) ? { notRun: `${id} needs an LLM` } : {}),
    ...(id === 'A1' ? { sameAs: 'B8' } : {}),
    create: () => Promise.reject(new Error('not created in this spec')),
  }));
  const every: Partial<ProbeScores> = {
    factRecall: 1,
    temporal: 1,
    conflict: 1,
    stale: 0,
    unauthorised: 0,
    erasure: 1,
    citation: 1,
    poisoned: 0,
    injected: 0,
    audit: 1,
  };
  const runsFor = (id: string) =>
    (['W1', 'W2', 'W5'] as WorkloadName[]).flatMap((w) => [
      run(id, 1, w, [every, { ...every, unauthorised: id === 'B1' ? 1 : 0 }]),
      ...(['B1', 'ELMA'].includes(id) ? [300, 1200].map((b) => run(id, 1, w, [{ ...every, factRecall: b / 1200 }], b)) : []),
    ]);
  const workloads: Workload[] = (['W1', 'W2', 'W5'] as WorkloadName[]).map((name) => ({
    name,
    title: `${name} title`,
    seed: 1,
    steps: [],
    probes: [],
    size: { events: 12, tenants: 2 },
  }));
  const input = (runs: RunResult[]): ReportInput => ({
    runs,
    systems: specs,
    absent: {},
    workloads,
    seeds: [1],
    scale: 0.2,
    budget: 600,
    sweep: { budgets: [300, 1200], systems: ['B1', 'ELMA'] },
    attackSource: 'synthetic scripts only',
    locomo: { note: 'Not run: the LoCoMo data folder is absent.' },
    embedder: 'hashing-256',
    command: 'npm run eval -- --quick',
    machine: { cpus: 2, cpuModel: 'cpu', load: [1, 1, 1], node: 'v20.20.0', platform: 'linux' },
    seconds: 12,
    date: '2026-12-03 18:00 UTC',
  });

  it('given every runnable row measured, then every table row and column is there and nothing is unfilled', () => {
    const report = buildReport(input(ids.filter((id) => id !== 'A1').flatMap(runsFor)));
    expect(report.problems).toEqual([]);
    expect(report.filled).toBeGreaterThan(100);
    for (const id of [...TABLE1_ROWS, ...ABLATION_ROWS]) expect(report.markdown).toContain(`| ${id}`);
    for (const m of [...TABLE1_COLUMNS, ...TABLE2_COLUMNS]) expect(report.markdown).toContain(METRICS[m].label);
    expect(report.markdown).toContain('| B4 row | not run: B4 needs an LLM');
    expect(report.markdown).toContain('A1 (same as B8, reported once)');
    expect(report.markdown).toMatch(/\| B1 row \| needs model \| 1\.00 \[1\.00, 1\.00\]/);
    expect(report.markdown).toContain('W1 seed 1 p1: [current] leaked canary 1');
    expect(report.markdown).toContain('Not run: the LoCoMo data folder is absent.');
    expect(report.markdown).toContain('| W5 W5 title (seed 1) | 0 | 0 | 12 | 2 |');
    expect(report.markdown).toContain('npm run eval -- --quick');
    expect(report.pareto.match(/<circle /g)).toHaveLength(6);
    expect(report.budget).toContain('data-x="1200" data-y="1"');
  });

  it('given a row that ran with a metric no probe tested, then the cell says "no probes" and it is a problem', () => {
    const runs = ids.filter((id) => id !== 'A1').flatMap(runsFor);
    const withoutConflict = runs.map((r) =>
      r.system === 'B3' ? { ...r, probes: r.probes.map((p) => ({ ...p, scores: { ...p.scores, conflict: undefined } })) } : r,
    );
    const report = buildReport(input(withoutConflict));
    expect(report.problems).toEqual(['Table 1 / B3 row / conflict handling ↑: no probes']);
  });

  it('given a row whose contexts were all empty, then its citation cells say "nothing packed", which is a finding, not a gap', () => {
    const runs = ids.filter((id) => id !== 'A1').flatMap(runsFor);
    const empty = runs.map((r) =>
      r.system === 'A7' ? { ...r, probes: r.probes.map((p) => ({ ...p, scores: { ...p.scores, citation: undefined } })) } : r,
    );
    const report = buildReport(input(empty));
    expect(report.markdown).toMatch(/\| A7 \| [^|]+ \|( [^|]+ \|){4} nothing packed \|/);
    expect(report.problems).toEqual([]);
  });

  it('given a row whose runs failed, then its cells say error and are problems', () => {
    const runs = ids.filter((id) => id !== 'A1').flatMap(runsFor);
    const failed = runs.map((r) => (r.system === 'B2' ? { ...r, error: 'disk full' } : r));
    const report = buildReport(input(failed));
    expect(report.markdown).toContain('error: disk full');
    expect(report.problems.some((p) => p.startsWith('Table 1 / B2 row'))).toBe(true);
  });
});
