import type { ScriptGroup } from '../text/script';

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

/**
 * How the BM25 and dense routes of a hybrid search become one ranking.
 * `normalised`: each route's scores are scaled to [0, 1] over the candidates
 * it returned (see `normaliseScores`) and summed with the weights; `rrf`:
 * reciprocal rank fusion, each route's term multiplied by its weight. In both,
 * a dense hit whose cosine is below `denseFloor` contributes nothing: the
 * nearest neighbours of a query always exist, related or not.
 */
export interface Fusion {
  method: 'normalised' | 'rrf';
  weights: { bm25: number; dense: number };
  denseFloor: number;
  /** How `normalised` scales each route (default DEFAULT_NORMALISATION). */
  normalisation?: Normalisation;
}

/** A hit of one route: its id and raw score (BM25: higher is better; dense: cosine). */
export interface RouteScore {
  id: string;
  score: number;
}

export interface FusedScore {
  id: string;
  score: number;
  /** 1-based rank in each route, when the hit came from it (a dense hit below the floor has none). */
  bm25Rank?: number;
  vectorRank?: number;
  /** What each route added to `score` (weighted, scaled as the fusion scaled it): `score` is their sum. */
  contributions: RouteContributions;
}

/** Each route's share of a fused score, present for the routes that found the hit. */
export interface RouteContributions {
  bm25?: number;
  dense?: number;
}

/**
 * How a route's raw scores are scaled: `minmax` maps the route's lowest
 * candidate to 0 and its best to 1; `max` divides by the best. Measured on
 * LoCoMo's dev half (evidence R@10, with neighbour smoothing): BM25 alone .619
 * minmax vs .591 max; BM25 + multilingual-e5-small .658 vs .608. `minmax` is
 * the default: e5's cosines sit in a narrow band, which dividing by the best
 * barely spreads.
 */
export type Normalisation = 'minmax' | 'max';
export const DEFAULT_NORMALISATION: Normalisation = 'minmax';

/**
 * Min-max reads a route's "unrelated" level off the tail of its candidates. A route that returned fewer
 * than this many (a small tenant, a selective filter) has no tail to read it from: its scores are scaled
 * from the route's own zero point instead (BM25: 0; dense: the model's floor), so the second of two hits
 * is not made worthless by being second.
 */
export const MINMAX_MIN_CANDIDATES = 10;

/**
 * Scores scaled to [0, 1] over the list (a single candidate, or all equal, scores 1). `zero` is the
 * route's own zero point, used by `minmax` for a list shorter than MINMAX_MIN_CANDIDATES.
 */
export function normaliseScores(scores: readonly number[], how: Normalisation = DEFAULT_NORMALISATION, zero?: number): number[] {
  if (scores.length === 0) return [];
  const max = Math.max(...scores);
  const lowest = Math.min(...scores);
  const min = how === 'max' ? 0 : zero !== undefined && scores.length < MINMAX_MIN_CANDIDATES ? Math.min(zero, lowest) : lowest;
  const span = max - min;
  return scores.map((s) => (span > 0 ? (s - min) / span : 1));
}

/**
 * The routes' hits (each best first) as one ranking, best first; ties keep
 * the order of first appearance (BM25 then dense). Without `fusion`, plain
 * equal-weight RRF with no floor (what the index did before fusion was configurable).
 */
export function fuse(
  routes: { bm25: readonly RouteScore[]; dense: readonly RouteScore[] },
  fusion?: Fusion,
  scripts?: ReadonlyMap<string, ScriptGroup>,
): FusedScore[] {
  if (scripts && fusion?.method === 'normalised') {
    const byScript = fuseByScript(routes, fusion, scripts);
    if (byScript) return byScript;
  }
  const normalisation = fusion?.normalisation ?? DEFAULT_NORMALISATION;
  const dense = fusion ? routes.dense.filter((h) => h.score >= fusion.denseFloor) : routes.dense;
  const weights = fusion?.weights ?? { bm25: 1, dense: 1 };
  const fused = new Map<string, FusedScore>();
  const add = (list: readonly RouteScore[], contributions: number[], weight: number, route: 'bm25' | 'dense') =>
    list.forEach((hit, i) => {
      const entry = fused.get(hit.id) ?? { id: hit.id, score: 0, contributions: {} };
      entry.score += weight * contributions[i];
      entry.contributions[route] = weight * contributions[i];
      entry[route === 'bm25' ? 'bm25Rank' : 'vectorRank'] = i + 1;
      fused.set(hit.id, entry);
    });
  const contributions = (list: readonly RouteScore[], zero: number) =>
    fusion?.method === 'normalised'
      ? normaliseScores(
          list.map((h) => h.score),
          normalisation,
          zero,
        )
      : list.map((_, i) => 1 / (RRF_K + i + 1));
  add(routes.bm25, contributions(routes.bm25, 0), weights.bm25, 'bm25');
  add(dense, contributions(dense, fusion?.denseFloor ?? 0), weights.dense, 'dense');
  // A stable sort keeps first appearance among equal scores.
  return [...fused.values()].sort((a, b) => b.score - a.score);
}

/** Mean and standard deviation of a list (population; 0 for one value). */
function spread(values: readonly number[]): { mean: number; sd: number } {
  const mean = values.reduce((sum, v) => sum + v, 0) / values.length;
  return { mean, sd: Math.sqrt(values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / values.length) };
}

/**
 * `normalised` fusion for candidates written in more than one kind of writing (`scripts`, by id). A multilingual
 * embedder gives a text in the query's own language a higher cosine than any in the other, and BM25 only matches
 * within a language, so fused over all candidates the answer in the other language sinks below every same-language
 * hit that shares a topic word (and, on e5, below the dense floor). Instead:
 * - each group's cosines are calibrated onto the largest group's: mapped to the same number of standard deviations
 *   from that group's mean, so a group's best match stands out as much as it does among its own; the floor then
 *   applies to the calibrated cosine;
 * - each group is fused on its own, both routes scaled over that group's candidates only (a same-language BM25
 *   match no longer outweighs the other group's best dense match), and scaled to its group's best;
 * - each group is weighted by its best calibrated cosine over the best group's: the group whose best match stands
 *   out most ranks first, the others interleave just below it.
 * A group with fewer than MINMAX_MIN_CANDIDATES dense hits has no distribution to calibrate by: it is ranked with
 * the largest group, uncalibrated. Returns undefined (plain fusion applies) unless two groups have that many.
 */
export function fuseByScript(
  routes: { bm25: readonly RouteScore[]; dense: readonly RouteScore[] },
  fusion: Fusion,
  scripts: ReadonlyMap<string, ScriptGroup>,
): FusedScore[] | undefined {
  const counts = new Map<ScriptGroup | undefined, number>();
  for (const { id } of routes.dense) counts.set(scripts.get(id), (counts.get(scripts.get(id)) ?? 0) + 1);
  const calibrated = [...counts]
    .filter((entry): entry is [ScriptGroup, number] => entry[0] !== undefined && entry[1] >= MINMAX_MIN_CANDIDATES)
    .sort((a, b) => b[1] - a[1])
    .map(([script]) => script);
  if (calibrated.length < 2) return undefined;
  const groupOf = (id: string) => {
    const script = scripts.get(id);
    return script !== undefined && calibrated.includes(script) ? script : calibrated[0];
  };
  const groups = calibrated.map((script) => {
    const inGroup = (hit: RouteScore) => groupOf(hit.id) === script;
    return { bm25: routes.bm25.filter(inGroup), dense: routes.dense.filter(inGroup) };
  });
  const reference = spread(groups[0].dense.map((h) => h.score));
  for (const group of groups.slice(1)) {
    const { mean, sd } = spread(group.dense.map((h) => h.score));
    // The same number of standard deviations from the largest group's mean (a flat group sits at that mean).
    group.dense = group.dense.map((h) => ({ id: h.id, score: reference.mean + (sd > 0 ? (reference.sd * (h.score - mean)) / sd : 0) }));
  }
  const tops = groups.map((group) => Math.max(...group.dense.map((h) => h.score)));
  const best = Math.max(...tops);
  // Each hit's score in its group, and its routes' shares of it, scaled as the score is.
  const scores = new Map<string, Pick<FusedScore, 'score' | 'contributions'>>();
  groups.forEach((group, i) => {
    const fused = fuse(group, fusion);
    const top = fused[0]?.score ?? 0;
    const scale = top > 0 ? (best > 0 ? Math.max(0, tops[i]) / best : 1) / top : 0;
    for (const { id, score, contributions } of fused) {
      const scaled: RouteContributions = {};
      for (const route of ['bm25', 'dense'] as const) if (contributions[route] !== undefined) scaled[route] = contributions[route] * scale;
      scores.set(id, { score: score * scale, contributions: scaled });
    }
  });
  // Ranks and first appearance as in plain fusion; a hit that only calibration lifted over the floor joins after.
  const plain: FusedScore[] = fuse(routes, fusion);
  const seen = new Set(plain.map((hit) => hit.id));
  const lifted = [...scores.keys()]
    .filter((id) => !seen.has(id))
    .map((id): FusedScore => ({ id, score: 0, vectorRank: rankIn(routes.dense, id), contributions: {} }));
  return [...plain, ...lifted]
    .map((hit) => ({ ...hit, ...(scores.get(hit.id) ?? { score: 0, contributions: {} }) }))
    .sort((a, b) => b.score - a.score);
}

/** 1-based rank of an id in a route's hits. */
function rankIn(list: readonly RouteScore[], id: string): number {
  return list.findIndex((hit) => hit.id === id) + 1;
}
