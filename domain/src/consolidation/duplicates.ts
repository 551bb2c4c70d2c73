import { dot } from '../recall/packing';

export interface DuplicateCandidate {
  id: string;
  /** L2-normalised embedding; absent while the record waits for its vector (it is then compared by `factKey` only). */
  vector?: Float32Array;
  /** `entity\u001fattribute\u001fvalue` of a semantic fact, normalised; equal keys are duplicates whatever the wording. */
  factKey?: string;
}

/**
 * Near-duplicate groups (docs/architecture.md#consolidation): records whose cosine similarity is at
 * least `threshold`, or that state the same fact, linked transitively
 * (union-find). Singletons are left out. Each group lists ids in input order,
 * so the first is the oldest when the input is in recording order.
 */
export function nearDuplicateGroups(candidates: DuplicateCandidate[], threshold: number): string[][] {
  const parent = candidates.map((_, i) => i);
  const find = (i: number): number => {
    while (parent[i] !== i) {
      parent[i] = parent[parent[i]];
      i = parent[i];
    }
    return i;
  };
  const union = (a: number, b: number) => {
    const [ra, rb] = [find(a), find(b)];
    if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
  };
  const byFact = new Map<string, number>();
  candidates.forEach((candidate, i) => {
    if (candidate.factKey === undefined) return;
    const first = byFact.get(candidate.factKey);
    if (first === undefined) byFact.set(candidate.factKey, i);
    else union(first, i);
  });
  for (let i = 0; i < candidates.length; i++) {
    for (let j = i + 1; j < candidates.length; j++) {
      const [a, b] = [candidates[i].vector, candidates[j].vector];
      if (a && b && find(i) !== find(j) && dot(a, b) >= threshold) union(i, j);
    }
  }
  const groups = new Map<number, string[]>();
  candidates.forEach((candidate, i) => {
    const root = find(i);
    const group = groups.get(root);
    if (group) group.push(candidate.id);
    else groups.set(root, [candidate.id]);
  });
  return [...groups.values()].filter((g) => g.length > 1);
}
