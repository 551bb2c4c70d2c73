/**
 * Pure helpers of the LoCoMo retrieval evaluation (`npm run eval:locomo`):
 * the session time parser, the ranking metrics and their bootstrap
 * intervals. No I/O, so they are unit tested with hand-computed cases and
 * never need the data folder.
 */
import { DEFAULT_BOOTSTRAP, bootstrapDifference, bootstrapMean, type BootstrapOptions, type Interval } from './bootstrap';

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

const SESSION_TIME = /^(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})$/i;

/**
 * LoCoMo's session time as written in the source ("1:56 pm on 8 May, 2023")
 * to an ISO 8601 instant. The source names no time zone; the wall-clock time
 * is read as UTC, which keeps the order of sessions and the calendar day of
 * each, all that temporal questions rely on.
 */
export function parseSessionDateTime(text: string): string {
  const match = SESSION_TIME.exec(text.trim());
  const month = match ? MONTHS.findIndex((m) => m === match[5].toLowerCase() || m.slice(0, 3) === match[5].toLowerCase()) : -1;
  if (!match || month < 0) throw new RangeError(`not a LoCoMo session time: "${text}"`);
  const [hour12, minute, day, year] = [match[1], match[2], match[4], match[6]].map(Number);
  if (hour12 < 1 || hour12 > 12 || minute > 59) throw new RangeError(`not a LoCoMo session time: "${text}"`);
  // 12 am is midnight and 12 pm is noon.
  const hour = (hour12 % 12) + (match[3].toLowerCase() === 'p' ? 12 : 0);
  const date = new Date(Date.UTC(year, month, day, hour, minute));
  // Date.UTC rolls 31 April over to 1 May; a date that does not round-trip did not exist.
  if (date.getUTCMonth() !== month || date.getUTCDate() !== day) throw new RangeError(`not a LoCoMo session time: "${text}"`);
  return date.toISOString();
}

/** How one ranking did for one question. */
export interface RetrievalScore {
  /** Share of the question's evidence among the first 5, 10 and 20 hits. */
  recall5: number;
  recall10: number;
  recall20: number;
  /** 1 / rank of the first evidence hit within the first 20, 0 if none. */
  reciprocalRank: number;
}

/** Deepest rank any metric looks at. */
export const MAX_DEPTH = 20;

/** Share of the distinct evidence ids found among the first k ranked ids. */
export function recallAt(k: number, ranked: readonly string[], evidence: readonly string[]): number {
  const wanted = new Set(evidence);
  if (wanted.size === 0) throw new RangeError('recall is undefined without evidence');
  const found = new Set(ranked.slice(0, k).filter((id) => wanted.has(id)));
  return found.size / wanted.size;
}

/** 1 / (1-based rank) of the first evidence id within the first `depth` ranked ids, 0 if none. */
export function reciprocalRank(ranked: readonly string[], evidence: readonly string[], depth = MAX_DEPTH): number {
  const wanted = new Set(evidence);
  const index = ranked.slice(0, depth).findIndex((id) => wanted.has(id));
  return index < 0 ? 0 : 1 / (index + 1);
}

export function scoreRetrieval(ranked: readonly string[], evidence: readonly string[]): RetrievalScore {
  return {
    recall5: recallAt(5, ranked, evidence),
    recall10: recallAt(10, ranked, evidence),
    recall20: recallAt(20, ranked, evidence),
    reciprocalRank: reciprocalRank(ranked, evidence),
  };
}

export interface ScoredQuestion {
  /** Which question (e.g. `conv-26/0`): pairs the scores of two routes for a difference. */
  question?: string;
  category: number;
  /** The route or variant that ranked (e.g. `bm25`, `fused`). */
  route: string;
  score: RetrievalScore;
}

/** Mean scores of one category (or of all categories) on one route. */
export interface SummaryRow {
  category: number | 'all';
  route: string;
  n: number;
  recall5: number;
  recall10: number;
  recall20: number;
  mrr: number;
  /** Bootstrap interval of `recall10` (questions resampled), when asked for. */
  recall10Interval?: Interval;
}

/**
 * Mean of each metric over the questions of every category and route, then
 * over all questions of each route. Every question weighs the same, so the
 * `all` row is not the mean of the category rows when categories differ in size.
 * Rows come by category (ascending, `all` last), routes in order of first appearance.
 * With `bootstrap`, each row gets the interval of its R@10, from the row's own
 * questions resampled with the same seed (so routes are resampled alike).
 */
export function summarise(scored: readonly ScoredQuestion[], bootstrap?: BootstrapOptions): SummaryRow[] {
  const routes = [...new Set(scored.map((s) => s.route))];
  const categories = [...new Set(scored.map((s) => s.category))].sort((a, b) => a - b);
  const rows: SummaryRow[] = [];
  for (const category of [...categories, 'all' as const]) {
    for (const route of routes) {
      const group = scored.filter((s) => s.route === route && (category === 'all' || s.category === category));
      if (group.length === 0) continue;
      const row: SummaryRow = { category, route, n: group.length, ...means(group.map((s) => s.score)) };
      if (bootstrap)
        row.recall10Interval = bootstrapMean(
          group.map((s) => s.score.recall10),
          bootstrap,
        );
      rows.push(row);
    }
  }
  return rows;
}

function means(scores: readonly RetrievalScore[]): Omit<SummaryRow, 'category' | 'route' | 'n'> {
  const mean = (pick: (s: RetrievalScore) => number) => scores.reduce((sum, s) => sum + pick(s), 0) / scores.length;
  return {
    recall5: mean((s) => s.recall5),
    recall10: mean((s) => s.recall10),
    recall20: mean((s) => s.recall20),
    mrr: mean((s) => s.reciprocalRank),
  };
}

/** How much one route gains over another on the same questions, with its bootstrap interval. */
export interface Gain {
  route: string;
  over: string;
  metric: 'recall10';
  n: number;
  mean: number;
  low: number;
  high: number;
}

/**
 * The overall R@10 gain of each `[route, over]` pair, paired by question
 * (`ScoredQuestion.question`): only questions both routes answered count.
 * Pairs naming a route without scores are left out.
 */
export function gains(
  scored: readonly ScoredQuestion[],
  pairs: readonly (readonly [string, string])[],
  bootstrap: BootstrapOptions = DEFAULT_BOOTSTRAP,
): Gain[] {
  const byRoute = new Map<string, Map<string, number>>();
  for (const s of scored) {
    if (s.question === undefined) throw new RangeError('a gain pairs questions: every score needs its question');
    const route = byRoute.get(s.route) ?? new Map<string, number>();
    route.set(s.question, s.score.recall10);
    byRoute.set(s.route, route);
  }
  const result: Gain[] = [];
  for (const [route, over] of pairs) {
    const a = byRoute.get(route);
    const b = byRoute.get(over);
    if (!a || !b) continue;
    const both = [...a.keys()].filter((q) => b.has(q));
    if (both.length === 0) continue;
    const difference = bootstrapDifference(
      both.map((q) => a.get(q)!),
      both.map((q) => b.get(q)!),
      bootstrap,
    );
    result.push({ route, over, metric: 'recall10', n: both.length, ...difference });
  }
  return result;
}
