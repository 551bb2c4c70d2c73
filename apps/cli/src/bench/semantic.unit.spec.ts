import { describe, expect, it } from 'vitest';
import { prng } from './corpus';
import { embedderEnv } from './embedder-env';
import { gaussian, topK } from './semantic';

const unit = (values: number[]) => {
  const length = Math.hypot(...values);
  return Float32Array.from(values.map((v) => v / length));
};
const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i], 0);

describe('reused vectors with noise', () => {
  const original = unit(Array.from({ length: 384 }, (_, i) => Math.sin(i + 1)));

  it('stay unit length, near their original, and differ from each other', () => {
    const noise = gaussian(prng(1), 0.02);
    const [a, b] = [noise(original), noise(original)];
    expect(Math.sqrt(dot(a, a))).toBeCloseTo(1, 5);
    // Expected cosine 1 / sqrt(1 + 384 * 0.02^2) = 0.93.
    expect(dot(a, original)).toBeGreaterThan(0.9);
    expect(dot(a, original)).toBeLessThan(0.96);
    expect(dot(a, b)).toBeLessThan(0.95);
  });

  it('are the same for the same seed', () => {
    expect(gaussian(prng(5), 0.02)(original)).toEqual(gaussian(prng(5), 0.02)(original));
  });
});

describe('exact top k', () => {
  it('returns the ids of the nearest vectors, nearest first', () => {
    const q = unit([1, 0, 0]);
    const entries = [
      ['far', unit([0, 1, 0])],
      ['near', unit([1, 0.1, 0])],
      ['nearest', unit([1, 0.01, 0])],
      ['opposite', unit([-1, 0, 0])],
    ] as const;
    expect(topK(entries, q, 2)).toEqual(['nearest', 'near']);
    expect(topK(entries, q, 10)).toEqual(['nearest', 'near', 'far', 'opposite']);
  });
});

describe('embedder settings of the environment', () => {
  it('keeps ELMA_EMBEDDER and the ELMA_EMBEDDING_ variables, nothing else', () => {
    const env = {
      ELMA_EMBEDDER: 'openai-compatible',
      ELMA_EMBEDDER_PORT: '18502',
      ELMA_EMBEDDING_URL: 'http://127.0.0.1:18501',
      ELMA_DATA_DIR: '/elsewhere',
      ELMA_EMBEDDINGS: 'x',
    };
    expect(embedderEnv(env)).toEqual({
      ELMA_EMBEDDER: 'openai-compatible',
      ELMA_EMBEDDER_PORT: '18502',
      ELMA_EMBEDDING_URL: 'http://127.0.0.1:18501',
    });
  });
});
