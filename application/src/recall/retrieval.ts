import {
  DEFAULT_EVIDENCE_STEPS,
  DEFAULT_SMOOTHING_FACTOR,
  feedbackVector,
  liftByConversation,
  matchesFilter,
  mergeExpansion,
  spreadOverConversations,
  type EvidenceSteps,
  type Expanded,
  type Fusion,
  type HybridQuery,
  type MemoryIndex,
  type SearchHit,
  type Via,
} from '@elma/domain';

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
  /** The evidence steps when the query names none (absent: DEFAULT_EVIDENCE_STEPS; `{}`: none). */
  steps?: EvidenceSteps;
}

/** A hit as retrieval ranks it: with how it was found when a step, not a route, found or lifted it. */
export type RankedHit = SearchHit & { via?: Via };

/**
 * The ranking stages around the index's hybrid search: the routes fused as
 * configured, then neighbour smoothing (domain/recall/smoothing), which
 * applies to whatever route found a hit, then the evidence steps
 * (domain/recall/evidence). Neighbours, expansion and feedback lookups go
 * through the index under the query's own filter and every hit they bring is
 * checked against it again, so a memory the caller may not see is never
 * used: it neither joins the candidates nor lends a score.
 */
export class Retrieval {
  constructor(
    private readonly index: MemoryIndex,
    private readonly options: RetrievalOptions = {},
  ) {}

  /** The query's hits, smoothed unless `smoothing` is false (or the factor is 0), best first, at most `limit`. */
  async search(query: Omit<HybridQuery, 'smoothing'> & { smoothing?: boolean; steps?: EvidenceSteps }): Promise<RankedHit[]> {
    const { smoothing, steps: asked, ...search } = query;
    const steps = asked ?? this.options.steps ?? DEFAULT_EVIDENCE_STEPS;
    const { pool = 1, ...each } = steps;
    const width = Math.ceil(search.limit * pool);
    // The conversation lift alone is the index's (`HybridQuery.conversation`): it lifts on row ids and reads
    // only the `limit` records it returns. With other steps, it lifts what they found.
    if (steps.conversation && !steps.feedback && !steps.expansion && !steps.spread) {
      const lifted = await this.route({ ...search, conversation: { ...steps.conversation, pool: width } }, smoothing);
      return lifted.map((hit) => (hit.conversation ? { ...hit, via: { route: 'conversation', lift: hit.conversation.lift } } : hit));
    }
    const stepping = Object.values(each).some((step) => step !== undefined);
    const limit = stepping ? width : search.limit;
    const first = await this.route({ ...search, limit }, smoothing);
    if (!stepping) return first;
    let hits: RankedHit[] = first;
    if (steps.feedback && search.vector) {
      const seeds = first.flatMap((hit) => (hit.vector ? [hit.vector] : [])).slice(0, steps.feedback.seeds);
      if (seeds.length > 0) {
        const before = new Set(first.map((hit) => hit.record.id));
        const again = await this.route(
          { ...search, vector: feedbackVector(search.vector, seeds, steps.feedback.weight), limit },
          smoothing,
        );
        hits = again.map((hit) => (before.has(hit.record.id) ? hit : { ...hit, via: { route: 'feedback' } }));
      }
    }
    if (steps.expansion) hits = mergeExpansion(hits, await this.expand(search, hits, steps.expansion), steps.expansion.weight);
    if (steps.conversation) hits = liftByConversation(hits, steps.conversation);
    if (steps.spread) hits = spreadOverConversations(hits, steps.spread);
    return hits.slice(0, search.limit);
  }

  private route(search: Omit<HybridQuery, 'smoothing'>, smoothing: boolean | undefined): Promise<SearchHit[]> {
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

  /** The memories nearest each seed's vector, looked up under the query's filter and checked against it again. */
  private async expand(
    search: Omit<HybridQuery, 'smoothing'>,
    hits: RankedHit[],
    { seeds, perSeed }: { seeds: number; perSeed: number },
  ): Promise<Expanded<RankedHit>[]> {
    const from = hits.filter((hit) => hit.vector).slice(0, seeds);
    const lists = await Promise.all(
      from.map((seed) =>
        this.index.search({ tenant: search.tenant, text: '', vector: seed.vector, limit: perSeed, filter: search.filter }),
      ),
    );
    return lists.flatMap((list, i) =>
      list
        .filter((hit) => hit.record.tenant === search.tenant && matchesFilter(hit.record, search.filter))
        .map((hit) => ({ hit, fromId: from[i].record.id, seedScore: from[i].score, similarity: hit.cosine ?? 0 })),
    );
  }
}
