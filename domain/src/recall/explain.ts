import type { EntityRef } from '../memory/record';
import type { SearchHit } from '../memory-index/port';
import type { Via } from './evidence';
import type { RecallReason, RecallScores } from './schema';

/** A packing candidate as recall sees it: a search hit, or an edge reached `hop` edges away at `entity`. */
export type RecallCandidate = SearchHit & { hop?: number; entity?: EntityRef; via?: Via };

/**
 * Why a candidate is in the answer and what made its score: each route's
 * contribution as the fusion computed it, the lift smoothing gave it, or the
 * score of the hop that reached it. `visible` says whether an id is one the
 * caller may see (a recall candidate): a smoothing neighbour names the memory
 * that lent it its score only then, so the reason never names a record the
 * caller may not see.
 */
export function explainCandidate(
  candidate: RecallCandidate,
  visible: (id: string) => boolean,
): { scores: RecallScores; reason: RecallReason } {
  const { contributions, smoothing, hop, entity } = candidate;
  if (hop !== undefined) {
    return { scores: { hop: candidate.score }, reason: { route: 'hop', hop, ...(entity ? { fromEntity: entity.id } : {}) } };
  }
  const { via } = candidate;
  // The conversation lift of the evidence steps is a lift by the item's conversation, as smoothing's is.
  const conversation = via?.route === 'conversation' ? via.lift : 0;
  const scores: RecallScores = {
    ...(contributions?.bm25 !== undefined ? { bm25: contributions.bm25 } : {}),
    ...(contributions?.dense !== undefined ? { dense: contributions.dense } : {}),
    ...(smoothing || conversation ? { smoothing: (smoothing?.lift ?? 0) + conversation } : {}),
  };
  // Found by an evidence step: near a hit's vector (`neighbourOf` names that hit when the caller may see it), or by
  // the query moved towards the best hits.
  if (via?.route === 'expansion')
    return { scores, reason: { route: 'expansion', ...(visible(via.fromId) ? { neighbourOf: via.fromId } : {}) } };
  if (via?.route === 'feedback') return { scores, reason: { route: 'expansion' } };
  const bm25 = candidate.bm25Rank !== undefined;
  const dense = candidate.vectorRank !== undefined;
  if (bm25 || dense) return { scores, reason: { route: bm25 && dense ? 'both' : bm25 ? 'bm25' : 'dense' } };
  // Found by no route, its whole score lent (by its neighbour, and by its conversation when the lift is on): it joined
  // the candidates as the conversation neighbour of a hit.
  if (smoothing && Math.abs(candidate.score - smoothing.lift - conversation) <= 1e-12 * Math.max(1, candidate.score)) {
    const lender = smoothing.neighbourOf;
    return { scores, reason: { route: 'neighbour', ...(lender !== undefined && visible(lender) ? { neighbourOf: lender } : {}) } };
  }
  // An index that fuses on its server (Elasticsearch's own RRF) reports no route: the fused routes found it.
  return { scores, reason: { route: 'both' } };
}
