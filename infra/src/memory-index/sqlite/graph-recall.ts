import { VectorGraph, type VectorGraphOptions } from './vector-graph';
import { cosine, norm } from './vectors';

export interface GraphRecall {
  /** Mean share of the exact top k (by cosine) that the graph search returned in its top k. */
  recall: number;
  k: number;
  candidates: number;
  expansionAdd: number;
  expansionSearch: number;
  /** Time to build the graph from the vectors, and mean time per graph query. */
  buildMs: number;
  queryMs: number;
}

/**
 * Recall@k of the HNSW graph against exact search: how many of each query's
 * true k nearest vectors (cosine, brute force) the graph finds, averaged over
 * the queries. What `expansion_search` (and `expansion_add`) are chosen by;
 * the bench reports it on the real model's vectors.
 */
export function measureGraphRecall(
  vectors: readonly Float32Array[],
  queries: readonly Float32Array[],
  options: VectorGraphOptions & {
    k?: number;
    /** Candidates asked of the graph, of which the best k count (the dense route asks for at least 64). Default k. */
    candidates?: number;
  } = {},
): GraphRecall {
  const k = options.k ?? 10;
  const candidates = Math.max(k, options.candidates ?? k);
  if (vectors.length === 0 || queries.length === 0) throw new RangeError('measureGraphRecall needs vectors and queries');
  const dimensions = vectors[0].length;
  const graph = new VectorGraph(dimensions, options);
  try {
    const started = performance.now();
    graph.add(
      vectors.map((_, i) => i + 1),
      [...vectors],
    );
    const buildMs = performance.now() - started;
    const norms = vectors.map((v) => norm(v));
    let found = 0;
    let searchMs = 0;
    for (const query of queries) {
      const queryNorm = norm(query);
      const exact = vectors
        .map((v, i) => ({ key: i + 1, similarity: norms[i] === 0 ? -Infinity : cosine(query, v, queryNorm) }))
        .sort((a, b) => b.similarity - a.similarity)
        .slice(0, k)
        .map((e) => e.key);
      const t = performance.now();
      const approximate = new Set(graph.search(query, candidates).slice(0, k));
      searchMs += performance.now() - t;
      found += exact.filter((key) => approximate.has(key)).length / exact.length;
    }
    return {
      recall: found / queries.length,
      k,
      candidates,
      expansionAdd: graph.expansionAdd,
      expansionSearch: graph.expansionSearch,
      buildMs,
      queryMs: searchMs / queries.length,
    };
  } finally {
    graph.release();
  }
}
