import { dot } from '@elma/domain';
import { describe, expect, it } from 'vitest';
import {
  candidateTokens,
  coverageExperiment,
  coverageOf,
  coverageWorkload,
  packForCoverage,
  truncateTopK,
  type CoverageCandidate,
  type CoverageQuestion,
} from './coverage';

const BUDGETS = [1, 16, 64, 256, 512, 1024, 2048];
const tokensOf = (chosen: readonly CoverageCandidate[]) => chosen.reduce((sum, c) => sum + candidateTokens(c), 0);

describe('coverage workload', () => {
  it('is the same for the same seed and differs for another', () => {
    const fingerprint = (questions: CoverageQuestion[]) =>
      questions.map((q) => ({
        language: q.language,
        aspects: q.aspects,
        candidates: q.candidates.map((c) => ({
          text: c.record.content.text,
          relevance: c.relevance,
          aspects: c.aspects,
          vector: Array.from(c.vector!),
          kind: c.record.kind,
        })),
      }));

    const first = fingerprint(coverageWorkload(7, 12));
    const again = fingerprint(coverageWorkload(7, 12));
    const other = fingerprint(coverageWorkload(8, 12));

    expect(again).toEqual(first);
    expect(other).not.toEqual(first);
  });

  it('has half the questions in Chinese, 3 to 6 aspects each, and 30 to 60 candidates in retrieval order', () => {
    const workload = coverageWorkload(42, 40);

    expect(workload.filter((q) => q.language === 'zh')).toHaveLength(20);
    for (const q of workload) {
      expect(q.aspects.length).toBeGreaterThanOrEqual(3);
      expect(q.aspects.length).toBeLessThanOrEqual(6);
      expect(q.candidates.length).toBeGreaterThanOrEqual(30);
      expect(q.candidates.length).toBeLessThanOrEqual(60);
      expect(q.candidates[0].relevance).toBe(1);
      q.candidates.forEach((c, i) => {
        if (i > 0) expect(c.relevance).toBeLessThanOrEqual(q.candidates[i - 1].relevance);
        expect(Math.sqrt(dot(c.vector!, c.vector!))).toBeCloseTo(1, 5);
      });
      // Every aspect is stated by at least one memory, so full coverage is reachable.
      expect(new Set(q.candidates.flatMap((c) => c.aspects))).toEqual(new Set(q.aspects));
    }
  });

  it('makes restatements of the popular aspect near-identical and other aspects roughly orthogonal to them', () => {
    const q = coverageWorkload(42, 1)[0];
    const duplicates = q.candidates.filter((c) => c.role === 'duplicate');
    const unrelated = q.candidates.filter((c) => c.role === 'aspect' && !c.aspects.includes(duplicates[0].aspects[0]));

    expect(duplicates.length).toBeGreaterThanOrEqual(4);
    for (const d of duplicates.slice(1)) expect(dot(d.vector!, duplicates[0].vector!)).toBeGreaterThan(0.85);
    for (const u of unrelated) expect(Math.abs(dot(u.vector!, duplicates[0].vector!))).toBeLessThan(0.5);
  });
});

describe('packer and top-k on the coverage workload', () => {
  const workload = coverageWorkload(3, 30);

  it('never exceed the budget', () => {
    for (const q of workload) {
      for (const budget of BUDGETS) {
        expect(tokensOf(packForCoverage(q, budget))).toBeLessThanOrEqual(budget);
        expect(tokensOf(truncateTopK(q, budget))).toBeLessThanOrEqual(budget);
      }
    }
  });

  it('top-k is a prefix of the retrieval order that stops at the first candidate that does not fit', () => {
    for (const q of workload) {
      const chosen = truncateTopK(q, 512);
      expect(chosen).toEqual(q.candidates.slice(0, chosen.length));
      if (chosen.length < q.candidates.length) expect(tokensOf(chosen) + candidateTokens(q.candidates[chosen.length])).toBeGreaterThan(512);
    }
  });

  it('coverage is a share between 0 and 1', () => {
    for (const q of workload) {
      expect(coverageOf(q, [])).toBe(0);
      expect(coverageOf(q, q.candidates)).toBe(1);
      for (const budget of BUDGETS) {
        for (const share of [coverageOf(q, packForCoverage(q, budget)), coverageOf(q, truncateTopK(q, budget))]) {
          expect(share).toBeGreaterThanOrEqual(0);
          expect(share).toBeLessThanOrEqual(1);
        }
      }
    }
  });
});

describe('coverage experiment', () => {
  it('the packer covers at least as much as top-k at 512 tokens on the seeded workload', async () => {
    // Measured for seed 42, 200 questions (gpt-tokenizer o200k counts):
    //   budget  packer  top-k  ratio
    //     256   0.886   0.341  2.60
    //     512   0.974   0.582  1.67
    //    1024   0.997   0.829  1.20
    //    2048   1.000   0.987  1.01
    const [row] = await coverageExperiment({ seed: 42, questions: 200, budgets: [512] });

    expect(row.budget).toBe(512);
    expect(row.packer).toBeGreaterThanOrEqual(row.topK);
    expect(row.ratio).toBeCloseTo(row.packer / row.topK, 10);
  });
});
