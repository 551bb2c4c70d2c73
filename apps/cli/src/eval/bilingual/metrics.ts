import type { RecallItem } from '@elma/domain';
import { DIRECTIONS, crossesLanguages, type Direction, type Split } from './data';

/** How deep MRR looks: recall considers 30 candidates. */
export const MRR_DEPTH = 30;

/**
 * A recall's memory ids, best first. Items come in prompt order (the most relevant nearest the question, last), so
 * the ranking is by score, descending; of equal scores, the one placed later in the prompt ranks first.
 */
export function rankedIds(items: readonly Pick<RecallItem, 'id' | 'score'>[]): string[] {
  return items
    .map((item, position) => ({ item, position }))
    .sort((a, b) => b.item.score - a.item.score || b.position - a.position)
    .map(({ item }) => item.id);
}

/** One question asked of one variant: the 1-based rank of its first expected memory, null when recall missed it. */
export interface Answer {
  split: Split;
  tenant: string;
  question: string;
  direction: Direction;
  variant: string;
  rank: number | null;
}

export function rankOf(ranked: readonly string[], expected: readonly string[]): number | null {
  const index = ranked.findIndex((id) => expected.includes(id));
  return index < 0 ? null : index + 1;
}

/** The rows of the report: each direction, then both cross-language directions and both same-language ones. */
export const GROUPS = [...DIRECTIONS, 'cross', 'same'] as const;
export type Group = (typeof GROUPS)[number];

const inGroup = (direction: Direction, group: Group): boolean =>
  group === 'cross' ? crossesLanguages(direction) : group === 'same' ? !crossesLanguages(direction) : direction === group;

export interface Row {
  split: Split;
  group: Group;
  variant: string;
  n: number;
  top1: number;
  top3: number;
  mrr: number;
}

/** Top-1 and top-3 rates and MRR (within MRR_DEPTH) per split, group and variant; groups with no question are left out. */
export function summarise(answers: readonly Answer[]): Row[] {
  const rows: Row[] = [];
  const splits = [...new Set(answers.map((a) => a.split))];
  const variants = [...new Set(answers.map((a) => a.variant))];
  for (const split of splits)
    for (const group of GROUPS)
      for (const variant of variants) {
        const these = answers.filter((a) => a.split === split && a.variant === variant && inGroup(a.direction, group));
        if (these.length === 0) continue;
        const share = (ok: (a: Answer) => boolean) => these.filter(ok).length / these.length;
        rows.push({
          split,
          group,
          variant,
          n: these.length,
          top1: share((a) => a.rank === 1),
          top3: share((a) => a.rank !== null && a.rank <= 3),
          mrr: these.reduce((sum, a) => sum + (a.rank !== null && a.rank <= MRR_DEPTH ? 1 / a.rank : 0), 0) / these.length,
        });
      }
  return rows;
}
