import { estimateTokens } from '../text/tokenize';

export interface PackCandidate {
  id: string;
  text: string;
  vector: Float32Array;
  /** Relevance from retrieval, normalised to [0, 1]. */
  relevance: number;
  confidence: number;
  /** Age of the evidence at the query's point in time, in days (>= 0). */
  ageDays: number;
}

export interface PackWeights {
  relevance: number;
  confidence: number;
  recency: number;
  /** Penalty weight on the maximum cosine similarity to already packed items (MMR). */
  redundancy: number;
  /** Half-life of the recency bonus in days. */
  recencyHalfLifeDays: number;
}

export const DEFAULT_PACK_WEIGHTS: PackWeights = {
  relevance: 1,
  confidence: 0.2,
  recency: 0.2,
  redundancy: 1,
  recencyHalfLifeDays: 30,
};

export interface Packed {
  id: string;
  tokens: number;
  gain: number;
}

/**
 * Budgeted packing (§5.3): repeatedly takes the candidate with the highest
 * marginal utility per token (utility minus an MMR redundancy penalty against
 * what is already packed) that still fits the budget; stops when nothing fits
 * or the best marginal gain is not positive.
 */
export function packByMarginalUtility(
  candidates: PackCandidate[],
  budgetTokens: number,
  weights: PackWeights = DEFAULT_PACK_WEIGHTS,
): Packed[] {
  const pool = candidates.map((c) => ({
    candidate: c,
    tokens: estimateTokens(c.text),
    // Relevance gates everything: an irrelevant item earns nothing however confident or recent it is.
    utility:
      weights.relevance *
      c.relevance *
      (1 + weights.confidence * c.confidence + weights.recency * Math.pow(0.5, c.ageDays / weights.recencyHalfLifeDays)),
    maxSimilarity: 0,
  }));
  const packed: Packed[] = [];
  let remaining = budgetTokens;
  while (pool.length > 0) {
    let bestIndex = -1;
    let bestPerToken = 0;
    let bestGain = 0;
    pool.forEach((entry, index) => {
      if (entry.tokens > remaining) return;
      const gain = entry.utility - weights.redundancy * entry.maxSimilarity;
      const perToken = gain / entry.tokens;
      if (gain > 0 && (bestIndex < 0 || perToken > bestPerToken)) {
        bestIndex = index;
        bestPerToken = perToken;
        bestGain = gain;
      }
    });
    if (bestIndex < 0) break;
    const [chosen] = pool.splice(bestIndex, 1);
    packed.push({ id: chosen.candidate.id, tokens: chosen.tokens, gain: bestGain });
    remaining -= chosen.tokens;
    for (const entry of pool) {
      entry.maxSimilarity = Math.max(entry.maxSimilarity, dot(entry.candidate.vector, chosen.candidate.vector));
    }
  }
  return packed;
}

/** Dot product; equals cosine similarity for L2-normalised vectors. */
export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) sum += a[i] * b[i];
  return sum;
}
