/** Reciprocal rank fusion constant; 60 is the value from Cormack et al. and what Elasticsearch uses. */
export const RRF_K = 60;

/**
 * Fuses ranked id lists: score(d) = sum over lists of 1 / (k + rank(d)), rank
 * 1-based. Ties keep the order of first appearance, so the result is deterministic.
 */
export function reciprocalRankFusion(rankings: string[][], k = RRF_K): { id: string; score: number }[] {
  const scores = new Map<string, number>();
  for (const ranking of rankings) {
    ranking.forEach((id, index) => scores.set(id, (scores.get(id) ?? 0) + 1 / (k + index + 1)));
  }
  return [...scores.entries()].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score);
}
