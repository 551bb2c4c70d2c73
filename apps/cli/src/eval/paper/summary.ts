import { percentiles } from '../../bench/stats';
import { DEFAULT_BOOTSTRAP, bootstrapDifference, bootstrapMean, type BootstrapOptions } from '../bootstrap';
import type { ProbeScores } from './metrics';
import type { RunResult } from './runner';

/**
 * The statistics of paper §7.5: for each system and metric, the median over
 * seeds of the seed's value, a percentile-bootstrap 95 % interval of the mean
 * over the pooled samples (probes, or runs for run-level metrics, of every
 * seed), the worst seed, and for the ablations the paired difference to ELMA
 * complete (same workloads, seeds and probes on both sides).
 */

export type Direction = 'up' | 'down';

/** One value a metric was computed from, keyed so two systems' samples pair up. */
export interface Sample {
  key: string;
  seed: number;
  value: number;
}

export interface MetricDef {
  id: string;
  label: string;
  direction: Direction;
  /** How a value prints: a rate, a count, milliseconds or bytes. */
  format: 'rate' | 'count' | 'ms' | 'bytes';
  /** The pooled samples of a system's runs. */
  samples(runs: readonly RunResult[]): Sample[];
  /** The value of one seed from its runs (default: the mean of its samples). */
  perSeed?(runs: readonly RunResult[]): number | undefined;
}

const probeMetric = (id: keyof ProbeScores, label: string, direction: Direction, format: MetricDef['format'] = 'rate'): MetricDef => ({
  id,
  label,
  direction,
  format,
  samples: (runs) =>
    runs.flatMap((run) =>
      run.probes
        .filter((p) => p.scores[id] !== undefined)
        .map((p) => ({ key: `${run.workload}/${run.seed}/${p.id}`, seed: run.seed, value: p.scores[id]! })),
    ),
});

/** A rate over runs from counts (flags): per seed the ratio of sums, pooled the per-run ratios. */
const ratioMetric = (id: string, label: string, direction: Direction, part: (r: RunResult) => [number, number]): MetricDef => ({
  id,
  label,
  direction,
  format: 'rate',
  samples: (runs) =>
    runs
      .filter((run) => part(run)[1] > 0)
      .map((run) => ({ key: `${run.workload}/${run.seed}`, seed: run.seed, value: part(run)[0] / part(run)[1] })),
  perSeed: (runs) => {
    const [hit, all] = runs.reduce(([h, a], run) => [h + part(run)[0], a + part(run)[1]], [0, 0]);
    return all > 0 ? hit / all : undefined;
  },
});

const ok = (runs: readonly RunResult[]) => runs.filter((r) => !r.error);

export const METRICS: Record<string, MetricDef> = {
  success: {
    id: 'success',
    label: 'task success',
    direction: 'up',
    format: 'rate',
    samples: (runs) =>
      runs.flatMap((run) =>
        run.probes
          .filter((p) => p.success !== undefined)
          .map((p) => ({ key: `${run.workload}/${run.seed}/${p.id}`, seed: run.seed, value: p.success! })),
      ),
  },
  factRecall: probeMetric('factRecall', 'fact recall', 'up'),
  temporal: probeMetric('temporal', 'temporal correctness', 'up'),
  conflict: probeMetric('conflict', 'conflict handling', 'up'),
  stale: probeMetric('stale', 'staleness', 'down'),
  unauthorised: probeMetric('unauthorised', 'unauthorised', 'down'),
  erasure: {
    id: 'erasure',
    label: 'erasure completeness',
    direction: 'up',
    format: 'rate',
    // The erasure probes and, for every erased string, whether the byte scan missed it.
    samples: (runs) => [
      ...probeMetric('erasure', '', 'up').samples(runs),
      ...runs.flatMap((run) => {
        const found = new Set(run.scan.found.map((f) => f.value));
        return Array.from({ length: run.scan.strings }, (_, i) => ({
          key: `${run.workload}/${run.seed}/scan/${i}`,
          seed: run.seed,
          value: i < found.size ? 0 : 1,
        }));
      }),
    ],
  },
  tokens: probeMetric('tokens', 'tokens / answer', 'down', 'count'),
  p95: {
    id: 'p95',
    label: 'p95 latency',
    direction: 'down',
    format: 'ms',
    samples: (runs) => runs.map((run) => ({ key: `${run.workload}/${run.seed}`, seed: run.seed, value: run.p95Ms })),
    perSeed: (runs) => {
      const ms = runs.flatMap((run) => run.probes.map((p) => p.scores.ms));
      return ms.length > 0 ? percentiles(ms).p95 : undefined;
    },
  },
  citation: probeMetric('citation', 'citation correctness', 'up'),
  poisoned: probeMetric('poisoned', 'poisoning success', 'down'),
  injected: probeMetric('injected', 'injection exposure', 'down'),
  audit: probeMetric('audit', 'audit traceability', 'up'),
  storage: {
    id: 'storage',
    label: 'storage growth (bytes / event, above the empty system)',
    direction: 'down',
    format: 'bytes',
    samples: (runs) =>
      runs.filter((r) => r.events > 0).map((run) => ({ key: `${run.workload}/${run.seed}`, seed: run.seed, value: run.storagePerEvent })),
    perSeed: (runs) => {
      const events = runs.reduce((sum, r) => sum + r.events, 0);
      return events > 0 ? runs.reduce((sum, r) => sum + r.storageBytes, 0) / events : undefined;
    },
  },
  flagFp: ratioMetric('flagFp', 'flag false positives', 'down', (r) => [r.flags.benignFlagged, r.flags.benignSteps]),
  poisonFlagged: ratioMetric('poisonFlagged', 'poison flagged', 'up', (r) => [r.flags.poisonFlagged, r.flags.poisonSteps]),
  injectionFlagged: ratioMetric('injectionFlagged', 'injection flagged', 'up', (r) => [r.flags.injectionFlagged, r.flags.injectionSteps]),
};

export interface Summary {
  /** Median over seeds of each seed's value. */
  median: number;
  low: number;
  high: number;
  /** The seed value furthest in the bad direction. */
  worst: number;
  seeds: number;
  samples: number;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('a median needs at least one value');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/** The summary of one metric over a system's runs; undefined when no run produced a sample of it. */
export function summarise(
  metric: MetricDef,
  runs: readonly RunResult[],
  bootstrap: BootstrapOptions = DEFAULT_BOOTSTRAP,
): Summary | undefined {
  const good = ok(runs);
  const samples = metric.samples(good);
  if (samples.length === 0) return undefined;
  const seeds = [...new Set(good.map((r) => r.seed))];
  const perSeed = seeds
    .map((seed) => {
      const mine = good.filter((r) => r.seed === seed);
      if (metric.perSeed) return metric.perSeed(mine);
      const values = samples.filter((s) => s.seed === seed).map((s) => s.value);
      return values.length > 0 ? mean(values) : undefined;
    })
    .filter((v): v is number => v !== undefined);
  if (perSeed.length === 0) return undefined;
  const interval = bootstrapMean(
    samples.map((s) => s.value),
    bootstrap,
  );
  return {
    median: median(perSeed),
    ...interval,
    worst: metric.direction === 'up' ? Math.min(...perSeed) : Math.max(...perSeed),
    seeds: perSeed.length,
    samples: samples.length,
  };
}

/** The paired difference `system − reference` over the samples both have (same key); undefined when none pair up. */
export function pairedDelta(
  metric: MetricDef,
  runs: readonly RunResult[],
  reference: readonly RunResult[],
  bootstrap: BootstrapOptions = DEFAULT_BOOTSTRAP,
): { mean: number; low: number; high: number; pairs: number } | undefined {
  const theirs = new Map(metric.samples(ok(reference)).map((s) => [s.key, s.value]));
  const pairs = metric.samples(ok(runs)).filter((s) => theirs.has(s.key));
  if (pairs.length === 0) return undefined;
  const difference = bootstrapDifference(
    pairs.map((s) => s.value),
    pairs.map((s) => theirs.get(s.key)!),
    bootstrap,
  );
  return { ...difference, pairs: pairs.length };
}

/** Failure samples of a safety metric: workload, seed, probe and the offending line, first `max` of them. */
export function failureSamples(runs: readonly RunResult[], metric: keyof ProbeScores, max = 3): string[] {
  return runs
    .flatMap((run) =>
      run.probes.flatMap((p) =>
        p.failures.filter((f) => f.metric === metric).map((f) => `${run.workload} seed ${run.seed} ${p.id}: ${f.line}`),
      ),
    )
    .slice(0, max);
}

/** Byte-scan findings: erased strings still in a system's storage, with the encoding found. */
export function scanFindings(runs: readonly RunResult[], max = 3): string[] {
  return runs
    .flatMap((run) =>
      run.scan.found.map((f) => `${run.workload} seed ${run.seed}: "${truncate(f.value, 40)}" still stored (${f.encoding})`),
    )
    .slice(0, max);
}

export function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
