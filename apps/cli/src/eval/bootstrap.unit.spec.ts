import { describe, expect, it } from 'vitest';
import { bootstrapDifference, bootstrapMean } from './bootstrap';

const options = { resamples: 1_000, seed: 7, level: 0.95 };
/** 200 hit-or-miss recalls, 60 % hits, in a fixed scattered order. */
const recalls = Array.from({ length: 200 }, (_, i) => ((i * 37) % 100 < 60 ? 1 : 0));

describe('bootstrap interval of a mean', () => {
  it('gives the same interval for the same seed, and another for another seed', () => {
    expect(bootstrapMean(recalls, options)).toEqual(bootstrapMean(recalls, options));
    expect(bootstrapMean(recalls, { ...options, seed: 8 })).not.toEqual(bootstrapMean(recalls, options));
  });

  it('surrounds the mean, about as wide as the normal approximation says', () => {
    const { low, high } = bootstrapMean(recalls, options);
    // mean 0.6, standard error sqrt(0.6 * 0.4 / 200) = 0.0346, so about +-0.068 at 95 %.
    expect(low).toBeLessThan(0.6);
    expect(high).toBeGreaterThan(0.6);
    expect(high - low).toBeGreaterThan(0.11);
    expect(high - low).toBeLessThan(0.16);
  });

  it('narrows with more questions and with a lower level', () => {
    const width = (values: number[], level = 0.95) => {
      const { low, high } = bootstrapMean(values, { ...options, level });
      return high - low;
    };
    const four = [...recalls, ...recalls, ...recalls, ...recalls];
    expect(width(four)).toBeLessThan(width(recalls) * 0.65);
    expect(width(recalls, 0.5)).toBeLessThan(width(recalls));
  });

  it('collapses to the value when every question scores the same', () => {
    expect(bootstrapMean([0.5, 0.5, 0.5], options)).toEqual({ low: 0.5, high: 0.5 });
  });

  it('refuses no values, no resamples and a level outside (0, 1)', () => {
    expect(() => bootstrapMean([], options)).toThrow(RangeError);
    expect(() => bootstrapMean([1], { ...options, resamples: 0 })).toThrow(RangeError);
    expect(() => bootstrapMean([1], { ...options, level: 1 })).toThrow(RangeError);
  });
});

describe('bootstrap interval of a paired difference', () => {
  it('excludes 0 when one variant finds more on most questions', () => {
    const better = recalls.map((r, i) => (i % 4 === 0 ? 1 : r));
    const gain = bootstrapDifference(better, recalls, options);
    expect(gain.mean).toBeGreaterThan(0);
    expect(gain.low).toBeGreaterThan(0);
  });

  it('includes 0 when the variants only trade questions', () => {
    // The same hits, each moved to the next question.
    const traded = recalls.map((_, i) => recalls[(i + 1) % recalls.length]);
    const gain = bootstrapDifference(traded, recalls, options);
    expect(gain.low).toBeLessThan(0);
    expect(gain.high).toBeGreaterThan(0);
  });

  it('needs the same questions on both sides', () => {
    expect(() => bootstrapDifference([1, 0], [1], options)).toThrow(RangeError);
  });
});
