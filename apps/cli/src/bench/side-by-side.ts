/**
 * Timing several contenders on the same queries, side by side in one
 * process. Whoever runs second on a query finds its pages in the cache and
 * its statements warm, and drift on a shared machine hits whoever runs at
 * that moment; so the order changes from query to query and, over every run
 * of n! queries, each contender runs first, and before each other one,
 * equally often.
 */

/** A contender: one query's work, awaited whole inside its timed window (deferred work included). */
export interface Contender {
  name: string;
  run(query: number): unknown;
}

const orders = new Map<number, number[][]>();

/** Every order of `n` contenders, in lexicographic order ([0, 1], [1, 0] for two). */
export function permutations(n: number): number[][] {
  if (!Number.isInteger(n) || n < 1) throw new RangeError('n must be a positive integer');
  let known = orders.get(n);
  if (!known) {
    known =
      n === 1
        ? [[0]]
        : Array.from({ length: n }, (_, first) => first).flatMap((first) =>
            permutations(n - 1).map((rest) => [first, ...rest.map((r) => (r >= first ? r + 1 : r))]),
          );
    orders.set(n, known);
  }
  return known;
}

/** The order in which the contenders run on query `i`: the permutations in turn. */
export function orderOf(i: number, n: number): number[] {
  const all = permutations(n);
  return all[i % all.length];
}

/**
 * Runs every contender once on each query in `queries` (indices into the caller's list), in `orderOf` order
 * (`offset` shifts the cycle, so a second pass can continue it), and returns each contender's milliseconds.
 */
export async function sideBySide(contenders: readonly Contender[], queries: readonly number[], offset = 0): Promise<number[][]> {
  const samples = contenders.map(() => [] as number[]);
  for (const [n, query] of queries.entries()) {
    for (const c of orderOf(offset + n, contenders.length)) {
      const start = performance.now();
      await contenders[c].run(query);
      samples[c].push(performance.now() - start);
    }
  }
  return samples;
}

/**
 * The targets of issue 18 for recall in a tenant of `size` memories: p95 at most `floorRatio` times the floor's
 * (2 at 10k, 1.5 from 100k), and at most 8 ms at 100k and 25 ms at 1M; between and beyond, on the power law
 * through those two points (25 / 8 over a tenfold size: n^0.49). No absolute target below 100k.
 */
export function recallTargets(size: number): { floorRatio: number; p95Ms?: number } {
  const floorRatio = size >= 100_000 ? 1.5 : 2;
  if (size < 100_000) return { floorRatio };
  const exponent = Math.log10(25 / 8);
  return { floorRatio, p95Ms: 8 * (size / 100_000) ** exponent };
}
