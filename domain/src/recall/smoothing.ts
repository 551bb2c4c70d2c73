import type { MemoryRecord } from '../memory/record';
import type { HybridQuery, IndexFilter, NeighbourMemory, Neighbours, SearchHit } from '../memory-index/port';
import { conversationKeys, liftPool } from './evidence';

/**
 * Two memories of a subject with no conversation id belong to the same
 * conversation when they are at most this far apart in time (valid time).
 */
export const CONVERSATION_GAP_MS = 30 * 60 * 1000;

/** Share of the better neighbour's score a memory gains (see `smoothByNeighbours`). */
export const DEFAULT_SMOOTHING_FACTOR = 0.5;

/**
 * Whether two memories are turns of one conversation, as neighbour smoothing
 * understands it: episodic, of the same subject, and either of the same
 * `session` or, both without one, at most CONVERSATION_GAP_MS apart.
 * The index adapters query neighbours by exactly this rule.
 */
export function sameConversation(
  a: Pick<MemoryRecord, 'kind' | 'subject' | 'session' | 'validFrom'>,
  b: Pick<MemoryRecord, 'kind' | 'subject' | 'session' | 'validFrom'>,
): boolean {
  if (a.kind !== 'episodic' || b.kind !== 'episodic' || a.subject !== b.subject) return false;
  if (a.session !== undefined || b.session !== undefined) return a.session === b.session;
  return Math.abs(Date.parse(a.validFrom) - Date.parse(b.validFrom)) <= CONVERSATION_GAP_MS;
}

/** A scored candidate: what smoothing reads and writes. */
export interface Smoothable {
  id: string;
  score: number;
}

/** A candidate after smoothing: its score with the lift, and where the lift came from. */
export interface Smoothed extends Smoothable {
  /** What smoothing added to the score (absent when nothing): `factor` times the lender's original score. */
  lift?: number;
  /** The neighbour whose score lent `lift`: the better-scored turn just before or after. */
  neighbourOf?: string;
}

/** A candidate's neighbours in its conversation, by id (either may be absent). */
export interface Adjacent {
  previous?: string;
  next?: string;
}

/**
 * Neighbour smoothing: the answer to a question is often the turn after the
 * one that matches it, so every memory gains `factor` times the better
 * (original) score of the turns just before and after it in its
 * conversation. A neighbour that was not a candidate has score 0 of its own
 * and joins the candidates with what it gains. Only the neighbours given are
 * used: the caller passes those the reader may see, so a hidden memory
 * neither appears nor changes a score. Result best first, ties in input
 * order then new neighbours in order of appearance.
 */
export function smoothByNeighbours(
  candidates: readonly Smoothable[],
  adjacent: ReadonlyMap<string, Adjacent>,
  factor = DEFAULT_SMOOTHING_FACTOR,
): Smoothed[] {
  const original = new Map(candidates.map((c) => [c.id, c.score]));
  // Whose neighbour each memory is: a neighbour gains from the candidates next to it.
  const around = new Map<string, Set<string>>();
  const link = (a: string, b: string) => {
    if (a === b) return;
    (around.get(a) ?? around.set(a, new Set()).get(a)!).add(b);
    (around.get(b) ?? around.set(b, new Set()).get(b)!).add(a);
  };
  for (const [id, { previous, next }] of adjacent) {
    if (!original.has(id)) continue;
    if (previous !== undefined) link(id, previous);
    if (next !== undefined) link(id, next);
  }
  const ids = [...original.keys(), ...[...around.keys()].filter((id) => !original.has(id))];
  return ids
    .map((id): Smoothed => {
      // The better neighbour lends; among equals, the first linked.
      let lender: string | undefined;
      for (const n of around.get(id) ?? []) if ((original.get(n) ?? 0) > (lender === undefined ? 0 : original.get(lender)!)) lender = n;
      const lift = lender === undefined ? 0 : factor * original.get(lender)!;
      const score = (original.get(id) ?? 0) + lift;
      return lift > 0 ? { id, score, lift, neighbourOf: lender } : { id, score };
    })
    .sort((a, b) => b.score - a.score);
}

/**
 * How many fused hits a search ranks before it cuts to `limit` (`HybridQuery`): smoothing's pool when it
 * smooths (the conversation lift then ranks what smoothing ranked, neighbours included, and costs no
 * deeper route), else the conversation lift's pool; at least `limit`.
 */
export function rankedPool({ limit, smoothing, conversation }: HybridQuery): number {
  if (smoothing && smoothing.factor > 0) return Math.max(limit, smoothing.pool);
  return Math.max(limit, conversation && conversation.weight > 0 ? conversation.pool : 0);
}

/**
 * `HybridQuery.smoothing` and `HybridQuery.conversation` by composition, for an index that does not rank
 * on its own row ids: the pool (`rankedPool`) searched plain, the neighbours of its hits looked up under
 * the same filter (so a memory the caller may not see neither joins nor lends a score),
 * `smoothByNeighbours`, the conversation lift (`liftPool`) over the records' conversations, the best `limit`.
 * A joining neighbour carries its record, vector and tokens but no ranks; a lifted hit says by how much
 * and from which neighbour (`SearchHit.smoothing`), or by how much its conversation lifted it (`SearchHit.conversation`).
 */
export async function smoothedSearch(
  query: HybridQuery,
  search: (query: HybridQuery) => Promise<SearchHit[]>,
  neighbours: (tenant: string, ids: string[], filter: IndexFilter) => Promise<Neighbours[]>,
): Promise<SearchHit[]> {
  const { smoothing, conversation, ...plain } = query;
  const smooth = smoothing && smoothing.factor > 0 ? smoothing : undefined;
  const lift = conversation && conversation.weight > 0 ? conversation : undefined;
  if (!smooth && !lift) return search(plain);
  const hits = await search({ ...plain, limit: rankedPool(query) });
  if (hits.length === 0) return hits;
  const smoothed = smooth ? await smoothHits(query, hits, smooth.factor, neighbours) : hits;
  if (!lift) return smoothed.slice(0, query.limit);
  const byId = new Map(smoothed.map((hit) => [hit.record.id, hit]));
  return liftPool(
    smoothed.map((hit) => ({ id: hit.record.id, score: hit.score })),
    (ids) => conversationKeys(ids.map((id) => byId.get(id)!.record)),
    lift,
  )
    .slice(0, query.limit)
    .map(({ id, score, conversationLift }) => ({
      ...byId.get(id)!,
      score,
      ...(conversationLift !== undefined ? { conversation: { lift: conversationLift } } : {}),
    }));
}

/** The hits smoothed by their neighbours under the query's filter, best first (neighbours that gain join). */
async function smoothHits(
  query: HybridQuery,
  hits: SearchHit[],
  factor: number,
  neighbours: (tenant: string, ids: string[], filter: IndexFilter) => Promise<Neighbours[]>,
): Promise<SearchHit[]> {
  const found = await neighbours(
    query.tenant,
    hits.map((hit) => hit.record.id),
    query.filter,
  );
  const adjacent = new Map<string, Adjacent>();
  const joining = new Map<string, NeighbourMemory>();
  for (const { id, previous, next } of found) {
    adjacent.set(id, { previous: previous?.record.id, next: next?.record.id });
    for (const neighbour of [previous, next]) if (neighbour) joining.set(neighbour.record.id, neighbour);
  }
  const byId = new Map(hits.map((hit) => [hit.record.id, hit]));
  const ranked = smoothByNeighbours(
    hits.map((hit) => ({ id: hit.record.id, score: hit.score })),
    adjacent,
    factor,
  );
  return ranked.map(({ id, score, lift, neighbourOf }) => {
    const smoothed = lift !== undefined ? { smoothing: { lift, neighbourOf } } : {};
    const hit = byId.get(id);
    if (hit) return { ...hit, score, ...smoothed };
    const { record, vector, tokens } = joining.get(id)!;
    return { record, score, ...(vector ? { vector } : {}), ...(tokens !== undefined ? { tokens } : {}), ...smoothed };
  });
}
