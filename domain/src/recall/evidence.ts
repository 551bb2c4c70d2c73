import type { MemoryRecord } from '../memory/record';
import { CONVERSATION_GAP_MS } from './smoothing';

/**
 * Steps between the routes and packing that look for evidence spread over
 * several conversations (application/recall/retrieval applies them). Each was
 * measured on LoCoMo's dev half as a paired R@10 gain over fused retrieval
 * with smoothing (`npm run eval:locomo`, docs/evaluation.md); only the
 * conversation lift is on by default (see DEFAULT_EVIDENCE_STEPS).
 */
export interface EvidenceSteps {
  /**
   * Conversation lift: a memory gains `weight` times the best hit's score, scaled by how much evidence its
   * conversation holds (the sum of its `depth` best scores, over the best conversation's).
   */
  conversation?: { weight: number; depth: number };
  /** Spread: each further memory of a conversation already ranked counts `decay` times less (per-conversation discount). */
  spread?: { decay: number };
  /**
   * Expansion: the `seeds` best hits each look up the `perSeed` memories nearest to their own vector in other
   * conversations (under the caller's filter); a memory found gains `weight` times seed score times cosine.
   */
  expansion?: { seeds: number; perSeed: number; weight: number };
  /** Dense feedback: the query vector is moved towards the mean vector of the `seeds` best hits by `weight`, and searched again. */
  feedback?: { seeds: number; weight: number };
  /**
   * How many times the asked `limit` the steps rank before cutting to it (default 1): a memory just outside
   * the first `limit` may be lifted into them. The conversation lift alone ranks at most this many of what
   * smoothing ranked, inside the index (`HybridQuery.conversation`: no deeper route, no more rows read);
   * the other steps search `pool` times deeper and read those rows.
   */
  pool?: number;
}

/** The conversation lift as measured: weight 0.3 over the 3 best of each conversation (flat over 0.2-0.5 and 2-5). */
export const CONVERSATION_LIFT = Object.freeze({ weight: 0.3, depth: 3 });

/**
 * The conversation lift (weight 0.3, depth 3) over all that smoothing ranked (up to 3× the limit), inside
 * the index: the one step that met both rules (a paired R@10 gain on LoCoMo's dev half whose interval is
 * above 0, and recall p95 at most 1.15× the path without it): +.018 [+.007, +.030], p95 1.05× cold and
 * 0.93× warm at 10,000 memories. Widening the fused pool to 3× (+.024) or 6× (+.031) costs 1.1-1.2× p95;
 * spread, expansion and dense feedback lose R@10 (docs/evaluation.md).
 */
export const DEFAULT_EVIDENCE_STEPS: EvidenceSteps = Object.freeze({ conversation: CONVERSATION_LIFT, pool: 3 });

/** How a candidate came to be where it is, beyond the routes: what the response's reason can say. */
export type Via =
  { route: 'conversation'; lift: number } | { route: 'expansion'; fromId: string; similarity: number } | { route: 'feedback' };

/** A ranked candidate the steps read and write (a search hit, in practice). */
export interface Ranked {
  record: Pick<MemoryRecord, 'id' | 'kind' | 'subject' | 'session' | 'validFrom'>;
  score: number;
  via?: Via;
}

/** Where an episodic memory sits: its subject, its `session` (absent: none) and its valid time (epoch ms). */
export interface TurnPlace {
  id: string;
  subject: string;
  session?: string;
  at: number;
}

/**
 * Which conversation each record belongs to, by the rule of neighbour smoothing (`sameConversation`):
 * episodic memories of one subject and one `session`; without sessions, a subject's memories chained
 * at most CONVERSATION_GAP_MS apart. Other kinds belong to none (undefined).
 */
export function conversationKeys(records: readonly Ranked['record'][]): Map<string, string | undefined> {
  const keys = new Map<string, string | undefined>(records.map((r) => [r.id, undefined]));
  const turns = records.flatMap((r) =>
    r.kind === 'episodic' ? [{ id: r.id, subject: r.subject, session: r.session, at: Date.parse(r.validFrom) }] : [],
  );
  for (const [id, key] of turnConversations(turns)) keys.set(id, key);
  return keys;
}

/** `conversationKeys` of the episodic memories given by their places (what an index knows without reading records). */
export function turnConversations(turns: readonly TurnPlace[]): Map<string, string> {
  const keys = new Map<string, string>();
  const loose: TurnPlace[] = [];
  for (const t of turns) {
    if (t.session !== undefined) keys.set(t.id, `s\u001f${t.subject}\u001f${t.session}`);
    else loose.push(t);
  }
  // Sessionless turns: sorted by subject then time, a gap longer than CONVERSATION_GAP_MS starts a new conversation.
  loose.sort((a, b) => (a.subject < b.subject ? -1 : a.subject > b.subject ? 1 : a.at - b.at));
  let key = '';
  let previous: TurnPlace | undefined;
  for (const t of loose) {
    if (!previous || previous.subject !== t.subject || t.at - previous.at > CONVERSATION_GAP_MS) key = `t\u001f${t.subject}\u001f${t.id}`;
    keys.set(t.id, key);
    previous = t;
  }
  return keys;
}

/**
 * Conversation lift: evidence of a question is often spread over several turns of the conversation that
 * discussed it, so a memory whose conversation holds several good hits is more likely relevant than an
 * equally scored one alone. Every memory in a conversation gains `weight × best × evidence / most`, where
 * `evidence` is the sum of its conversation's `depth` best scores and `most` the largest such sum. A memory
 * of no conversation gains nothing. Best first; ties keep input order.
 */
export function liftByConversation<T extends Ranked>(hits: readonly T[], options: ConversationLift): T[] {
  const lifts = conversationLifts(
    hits.map((h) => ({ id: h.record.id, score: h.score })),
    conversationKeys(hits.map((h) => h.record)),
    options,
  );
  if (lifts.size === 0) return [...hits];
  return hits
    .map((h) => {
      const lift = lifts.get(h.record.id);
      return lift ? { ...h, score: h.score + lift, via: h.via ?? { route: 'conversation' as const, lift } } : h;
    })
    .sort((a, b) => b.score - a.score);
}

/** The conversation lift's parameters (see `liftByConversation`). */
export interface ConversationLift {
  weight: number;
  depth: number;
}

/**
 * The conversation lift on ids: what each scored id gains (`liftByConversation`), given the conversation
 * each belongs to (`keys`; absent or undefined: none). Ids that gain nothing are left out.
 */
export function conversationLifts(
  scored: readonly { id: string; score: number }[],
  keys: ReadonlyMap<string, string | undefined>,
  { weight, depth }: ConversationLift,
): Map<string, number> {
  const lifts = new Map<string, number>();
  if (scored.length === 0 || weight <= 0) return lifts;
  const scores = new Map<string, number[]>();
  for (const { id, score } of scored) {
    const key = keys.get(id);
    if (key !== undefined) (scores.get(key) ?? scores.set(key, []).get(key)!).push(score);
  }
  const evidence = new Map([...scores].map(([key, list]) => [key, sum(list.sort((a, b) => b - a).slice(0, depth))]));
  const most = Math.max(0, ...evidence.values());
  const best = Math.max(0, ...scored.map((s) => s.score));
  if (most <= 0 || best <= 0) return lifts;
  for (const { id } of scored) {
    const key = keys.get(id);
    const lift = key === undefined ? 0 : (weight * best * evidence.get(key)!) / most;
    if (lift > 0) lifts.set(id, lift);
  }
  return lifts;
}

/**
 * `HybridQuery.conversation` on a ranked list (an index's, after smoothing): its best `pool` each lifted by
 * `conversationLifts` (`conversationOf` says which conversation each of them belongs to), best first, ties
 * in input order; what lies past the pool is dropped (it could not rise above a lifted one). A lifted item
 * says by how much (`conversationLift`).
 */
export function liftPool<T extends { id: string; score: number }>(
  ranked: readonly T[],
  conversationOf: (ids: string[]) => ReadonlyMap<string, string | undefined>,
  { weight, depth, pool }: ConversationLift & { pool: number },
): (T & { conversationLift?: number })[] {
  const top = ranked.slice(0, pool);
  const lifts = conversationLifts(top, conversationOf(top.map((r) => r.id)), { weight, depth });
  return top
    .map((r) => {
      const lift = lifts.get(r.id);
      return lift ? { ...r, score: r.score + lift, conversationLift: lift } : r;
    })
    .sort((a, b) => b.score - a.score);
}

/**
 * Spread: ranks greedily, each pick's score discounted by `decay` for every memory of its conversation
 * already picked, so that the first places cover several conversations. Scores are the discounted ones.
 */
export function spreadOverConversations<T extends Ranked>(hits: readonly T[], { decay }: { decay: number }): T[] {
  const keys = conversationKeys(hits.map((h) => h.record));
  const left = [...hits].sort((a, b) => b.score - a.score);
  const picked = new Map<string, number>();
  const out: T[] = [];
  while (left.length > 0) {
    let at = 0;
    let bestScore = -Infinity;
    left.forEach((h, i) => {
      const key = keys.get(h.record.id);
      const score = h.score * decay ** (key === undefined ? 0 : (picked.get(key) ?? 0));
      if (score > bestScore) [at, bestScore] = [i, score];
    });
    const [h] = left.splice(at, 1);
    const key = keys.get(h.record.id);
    if (key !== undefined) picked.set(key, (picked.get(key) ?? 0) + 1);
    out.push({ ...h, score: bestScore });
  }
  return out;
}

/** A memory an expansion lookup found from a seed hit, with its cosine to the seed. */
export interface Expanded<T> {
  hit: T;
  fromId: string;
  seedScore: number;
  similarity: number;
}

/**
 * Expansion: each memory found near a seed, in a conversation other than the seed's, gains `weight × seed
 * score × cosine` (its best over seeds); a memory that was no hit joins with that score and says where it
 * came from. Best first.
 */
export function mergeExpansion<T extends Ranked>(hits: readonly T[], found: readonly Expanded<T>[], weight: number): T[] {
  const keys = conversationKeys([...hits, ...found.map((f) => f.hit)].map((h) => h.record));
  const best = new Map<string, Expanded<T>>();
  for (const f of found) {
    const own = keys.get(f.hit.record.id);
    if (f.hit.record.id === f.fromId || (own !== undefined && own === keys.get(f.fromId))) continue;
    const known = best.get(f.hit.record.id);
    if (!known || known.seedScore * known.similarity < f.seedScore * f.similarity) best.set(f.hit.record.id, f);
  }
  const merged = new Map(hits.map((h) => [h.record.id, h]));
  for (const [id, f] of best) {
    const gain = weight * f.seedScore * Math.max(0, f.similarity);
    const via: Via = { route: 'expansion', fromId: f.fromId, similarity: f.similarity };
    const hit = merged.get(id);
    merged.set(id, hit ? { ...hit, score: hit.score + gain } : { ...f.hit, score: gain, via });
  }
  return [...merged.values()].sort((a, b) => b.score - a.score);
}

/** The query vector moved towards the mean of the seeds' vectors (unit length; `weight` 0 is the query's direction). */
export function feedbackVector(query: Float32Array, seeds: readonly Float32Array[], weight: number): Float32Array {
  const out = unit(query);
  for (const seed of seeds.map(unit)) for (let i = 0; i < out.length; i++) out[i] += (weight / seeds.length) * seed[i];
  return unit(out);
}

function unit(v: Float32Array): Float32Array {
  const length = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / length);
}

const sum = (list: readonly number[]) => list.reduce((a, b) => a + b, 0);
