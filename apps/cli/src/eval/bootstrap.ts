/**
 * Percentile bootstrap for the LoCoMo evaluation: how far a mean over the
 * questions could move had other questions of the same kind been asked.
 * Questions are resampled with replacement; the draws come from a seeded
 * generator, so a run prints the same intervals every time, and two variants
 * scored on the same questions are resampled identically (paired), which is
 * what makes the interval of their difference meaningful.
 */

import { prng } from '../bench/corpus';

/** A two-sided interval around a mean. */
export interface Interval {
  low: number;
  high: number;
}

export interface BootstrapOptions {
  /** Resamples drawn; 1,000 gives intervals stable to about a hundredth. */
  resamples: number;
  /** Seed of the draws: the same seed and the same number of values give the same resamples. */
  seed: number;
  /** Coverage of the interval, e.g. 0.95. */
  level: number;
}

export const DEFAULT_BOOTSTRAP: BootstrapOptions = { resamples: 1_000, seed: 15, level: 0.95 };

/**
 * The percentile interval of the mean of `values`: the `(1 - level) / 2` and
 * `(1 + level) / 2` quantiles of the means of `resamples` resamples of the
 * same size. Undefined (RangeError) for no values.
 */
export function bootstrapMean(values: readonly number[], options: BootstrapOptions = DEFAULT_BOOTSTRAP): Interval {
  const { resamples, seed, level } = options;
  if (values.length === 0) throw new RangeError('a bootstrap needs at least one value');
  if (!(Number.isInteger(resamples) && resamples > 0)) throw new RangeError('resamples must be a positive integer');
  if (!(level > 0 && level < 1)) throw new RangeError('level must lie between 0 and 1');
  const random = prng(seed);
  const n = values.length;
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += values[Math.floor(random() * n)];
    means[r] = sum / n;
  }
  means.sort();
  const tail = (1 - level) / 2;
  return { low: quantile(means, tail), high: quantile(means, 1 - tail) };
}

/**
 * The interval of the mean difference `a[i] - b[i]` of two variants scored on
 * the same questions (same order): an interval that excludes 0 says the gain
 * is not the luck of the question draw.
 */
export function bootstrapDifference(
  a: readonly number[],
  b: readonly number[],
  options: BootstrapOptions = DEFAULT_BOOTSTRAP,
): Interval & { mean: number } {
  if (a.length !== b.length) throw new RangeError('paired values need the same questions on both sides');
  const differences = a.map((x, i) => x - b[i]);
  return { mean: differences.reduce((sum, d) => sum + d, 0) / differences.length, ...bootstrapMean(differences, options) };
}

/** Linear interpolation between the order statistics of sorted values. */
function quantile(sorted: Float64Array, p: number): number {
  const position = p * (sorted.length - 1);
  const below = Math.floor(position);
  const above = Math.min(sorted.length - 1, below + 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - below);
}
