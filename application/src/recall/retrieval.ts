import { DEFAULT_SMOOTHING_FACTOR, type Fusion, type HybridQuery, type MemoryIndex, type SearchHit } from '@elma/domain';

/**
 * How many times `limit` hits smoothing ranks before cutting to `limit`. Measured on LoCoMo's dev half
 * (evidence R@10, BM25 + multilingual-e5-small fused, smoothed): pool 1× .689, 2× .704, 5× .707, every turn of
 * the conversation (25×) .718; BM25 alone smoothed stays at .687-.693 whatever the pool. Recall p95 at 10,000
 * memories (bench, side by side): 1× 8.6-9.3 ms, 2× 11.1 ms, 5× 17.8 ms against a 15 ms target: 2× takes most
 * of the gain within it.
 */
export const SMOOTHING_POOL = 2;
/** The widest pool, whatever the limit (the index caps each route's depth at 1,000). */
const MAX_SMOOTHING_POOL = 500;

export interface RetrievalOptions {
  /** Fusion of the routes when the query names none (absent: the index's default, equal-weight RRF). */
  fusion?: Fusion;
  /** Share of the better neighbour's score a memory gains; 0 turns smoothing off. */
  smoothing?: number;
}

/**
 * The ranking stages around the index's hybrid search: the routes fused as
 * configured, then neighbour smoothing (domain/recall/smoothing), which
 * applies to whatever route found a hit. Neighbours come from the index under
 * the query's own filter, so a memory the caller may not see is never used:
 * it neither joins the candidates nor lends a score.
 */
export class Retrieval {
  constructor(
    private readonly index: MemoryIndex,
    private readonly options: RetrievalOptions = {},
  ) {}

  /** The query's hits, smoothed unless `smoothing` is false (or the factor is 0), best first, at most `limit`. */
  async search(query: Omit<HybridQuery, 'smoothing'> & { smoothing?: boolean }): Promise<SearchHit[]> {
    const { smoothing, ...search } = query;
    const fusion = search.fusion ?? this.options.fusion;
    const factor = this.options.smoothing ?? DEFAULT_SMOOTHING_FACTOR;
    // Smoothing ranks a wider pool than it returns: a turn just outside the first `limit` lends its
    // neighbour half its score, and may be lifted into them itself. The index smooths (`HybridQuery.smoothing`).
    const pool = Math.min(search.limit * SMOOTHING_POOL, MAX_SMOOTHING_POOL);
    return this.index.search({
      ...search,
      ...(fusion ? { fusion } : {}),
      ...(smoothing !== false && factor > 0 ? { smoothing: { factor, pool } } : {}),
    });
  }
}
