import type { MemoryRecord } from '../memory/record';
import { CONVERSATION_GAP_MS } from './smoothing';

/**
 * Steps between the routes and packing that look for evidence spread over
 * several conversations (application/recall/retrieval applies them). Each was
 * measured on LoCoMo's dev half as a paired R@10 gain over fused retrieval
 * with smoothing (`npm run eval:locomo`, docs/evaluation.md); they are
 * options, off by default (see DEFAULT_EVIDENCE_STEPS).
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
   * the first `limit` may be lifted into them, for more rows read. Dev half, conversation lift at weight 0.2:
   * 1× +.012, 2× +.020, 3× +.027; recall p95 at 10,000 memories 3× costs 1.44-1.67× the path without steps.
   */
  pool?: number;
}

/**
 * No step is on by default: none met both rules (a paired R@10 gain on LoCoMo's dev half whose interval is
 * above 0, and recall p95 at most 1.15× the path without it). The conversation lift (weight 0.3, depth 3)
 * gains +.030 [+.018, +.046] over a pool 3× wider but costs 1.44-1.67× p95 at 10,000 memories; on the
 * candidates as found it costs nothing and gains +.010 [.000, +.022]. Spread, expansion and dense feedback
 * lose R@10 (docs/evaluation.md).
 */
export const DEFAULT_EVIDENCE_STEPS: EvidenceSteps = Object.freeze({});

/** The conversation lift as measured: weight 0.3 over the 3 best of each conversation (flat over 0.2-0.5 and 2-5). */
export const CONVERSATION_LIFT = Object.freeze({ weight: 0.3, depth: 3 });

/** How a candidate came to be where it is, beyond the routes: what the response's reason can say. */
export type Via =
  { route: 'conversation'; lift: number } | { route: 'expansion'; fromId: string; similarity: number } | { route: 'feedback' };

/** A ranked candidate the steps read and write (a search hit, in practice). */
export interface Ranked {
  record: Pick<MemoryRecord, 'id' | 'kind' | 'subject' | 'session' | 'validFrom'>;
  score: number;
  via?: Via;
}

/**
 * Which conversation each record belongs to, by the rule of neighbour smoothing (`sameConversation`):
 * episodic memories of one subject and one `session`; without sessions, a subject's memories chained
 * at most CONVERSATION_GAP_MS apart. Other kinds belong to none (undefined).
 */
export function conversationKeys(records: readonly Ranked['record'][]): Map<string, string | undefined> {
  const keys = new Map<string, string | undefined>();
  const loose: Ranked['record'][] = [];
  for (const r of records) {
    if (r.kind !== 'episodic') keys.set(r.id, undefined);
    else if (r.session !== undefined) keys.set(r.id, `s\u001f${r.subject}\u001f${r.session}`);
    else loose.push(r);
  }
  // Sessionless turns: sorted by subject then time, a gap longer than CONVERSATION_GAP_MS starts a new conversation.
  loose.sort((a, b) => (a.subject < b.subject ? -1 : a.subject > b.subject ? 1 : Date.parse(a.validFrom) - Date.parse(b.validFrom)));
  let key = '';
  let previous: Ranked['record'] | undefined;
  for (const r of loose) {
    const apart = previous ? Date.parse(r.validFrom) - Date.parse(previous.validFrom) : Infinity;
    if (!previous || previous.subject !== r.subject || apart > CONVERSATION_GAP_MS) key = `t\u001f${r.subject}\u001f${r.id}`;
    keys.set(r.id, key);
    previous = r;
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
export function liftByConversation<T extends Ranked>(hits: readonly T[], { weight, depth }: { weight: number; depth: number }): T[] {
  if (hits.length === 0 || weight <= 0) return [...hits];
  const keys = conversationKeys(hits.map((h) => h.record));
  const scores = new Map<string, number[]>();
  for (const h of hits) {
    const key = keys.get(h.record.id);
    if (key !== undefined) (scores.get(key) ?? scores.set(key, []).get(key)!).push(h.score);
  }
  const evidence = new Map([...scores].map(([key, list]) => [key, sum(list.sort((a, b) => b - a).slice(0, depth))]));
  const most = Math.max(0, ...evidence.values());
  const best = Math.max(0, ...hits.map((h) => h.score));
  if (most <= 0 || best <= 0) return [...hits];
  return hits
    .map((h) => {
      const key = keys.get(h.record.id);
      const lift = key === undefined ? 0 : (weight * best * evidence.get(key)!) / most;
      return lift > 0 ? { ...h, score: h.score + lift, via: h.via ?? { route: 'conversation' as const, lift } } : h;
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
