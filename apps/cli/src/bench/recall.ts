import { join } from 'node:path';
import type { Principal } from '@elma/domain';
import type { Elma } from '@elma/runtime';
import { CORPUS_SUBJECTS, prng, query } from './corpus';
import { Floor } from './floor';
import type { PrecomputedQueryEmbedder } from './query-vectors';
import { sideBySide, type Contender } from './side-by-side';
import { percentiles } from './stats';

export interface RecallBenchOptions {
  /** Distinct queries timed cold (each text's first recall), then again warm. */
  queries: number;
  /** Distinct queries run first and not timed (JIT, prepared statements, the policy's compilation). */
  warmup: number;
  /** What the bare search asks the index for (the recall figures' historical baseline). */
  bareLimit: number;
  /**
   * Candidates per route of the floor: what each of recall's routes hands to fusion (the index's depth for
   * recall's 30 candidates ranked in a smoothing pool of 60: 2 × 60).
   */
  floorDepth: number;
  /** Rows the floor reads and parses: recall's candidates. */
  floorRows: number;
}

export const DEFAULT_RECALL_BENCH: RecallBenchOptions = { queries: 300, warmup: 30, bareLimit: 30, floorDepth: 120, floorRows: 30 };

type Percentiles = ReturnType<typeof percentiles>;

/** One pass over the queries: each contender's percentiles. */
export interface Pass {
  recall: Percentiles;
  /** The same recall without the evidence steps (domain/recall/evidence): what the steps cost. */
  withoutSteps: Percentiles;
  /** The same recall scoped to one data subject (`filter.subjects`), pushed down into the index. */
  scoped: Percentiles;
  bare: Percentiles;
  floor?: Percentiles;
}

export interface RecallFigures {
  /** Milliseconds of embedding each query alone, apart from the recall figures. */
  embedding: Percentiles;
  /** Each query text's first recall (and first floor and bare search). */
  cold: Pass;
  /** The same texts again. */
  warm: Pass;
  /** Usage writes and other work a recall left running after its answer, per recall (all awaited inside its time). */
  deferredPerRecall: number;
  /** Deferred work still pending when the passes ended (0: all of it was inside the timed windows). */
  pendingAtEnd: number;
}

/**
 * Recall through the service (policy pushdown, hybrid search, per-hit re-check, smoothing, evidence steps,
 * packing, audit, usage), the same recall without the evidence steps and scoped to one data subject, the bare adapter search (no policy predicates, no packing) and the floor (`Floor`, on the
 * partition's own files; embedded index only), side by side on the same queries and precomputed vectors
 * (`sideBySide`). Each recall's time runs until the work it deferred (its usage count) is done.
 */
export async function measureRecall(
  elma: Elma,
  embedder: PrecomputedQueryEmbedder,
  who: Principal,
  options: RecallBenchOptions = DEFAULT_RECALL_BENCH,
): Promise<RecallFigures> {
  const texts = distinctQueries(options.warmup + options.queries);
  const embedding = percentiles(await embedder.precompute(texts));
  const vector = (i: number) => embedder.vectorOf(texts[i])!;
  const now = new Date().toISOString();
  let deferred = 0;
  const withoutSteps = elma.recall.withRanking({ steps: {} });
  const contenders: Contender[] = [
    {
      name: 'recall',
      run: async (i) => {
        await elma.recall.recall(who, { query: texts[i], purpose: 'support', budgetTokens: 1000 });
        deferred += elma.recall.deferredPending;
        await elma.recall.settled();
      },
    },
    {
      name: 'recall without steps',
      run: async (i) => {
        await withoutSteps.recall(who, { query: texts[i], purpose: 'support', budgetTokens: 1000 });
        await withoutSteps.settled();
      },
    },
    {
      name: 'scoped recall',
      run: async (i) => {
        await elma.recall.recall(who, { query: texts[i], purpose: 'support', budgetTokens: 1000, filter: { subjects: [subjectOf(i)] } });
        await elma.recall.settled();
      },
    },
    {
      name: 'bare',
      run: (i) =>
        elma.index.search({
          tenant: who.tenant,
          text: texts[i],
          vector: vector(i),
          limit: options.bareLimit,
          filter: { statuses: ['candidate', 'active', 'disputed', 'superseded', 'expired'], maxSensitivity: 'restricted', now },
        }),
    },
  ];
  // The floor reads the saved graph file: everything added so far is written first.
  await elma.index.flush();
  const floor =
    elma.config.index === 'sqlite'
      ? new Floor({
          indexDir: join(elma.config.dataDir, 'index'),
          tenant: who.tenant,
          dimensions: embedder.dimensions,
          depth: options.floorDepth,
          rows: options.floorRows,
        })
      : undefined;
  if (floor) contenders.push({ name: 'floor', run: (i) => floor.query(texts[i], vector(i)) });
  try {
    const warmup = Array.from({ length: options.warmup }, (_, i) => i);
    const timed = Array.from({ length: options.queries }, (_, i) => options.warmup + i);
    await sideBySide(contenders, warmup);
    deferred = 0;
    const cold = await sideBySide(contenders, timed);
    const warm = await sideBySide(contenders, timed, timed.length);
    const pass = (samples: number[][]): Pass => ({
      recall: percentiles(samples[0]),
      withoutSteps: percentiles(samples[1]),
      scoped: percentiles(samples[2]),
      bare: percentiles(samples[3]),
      ...(floor ? { floor: percentiles(samples[4]) } : {}),
    });
    return {
      embedding,
      cold: pass(cold),
      warm: pass(warm),
      deferredPerRecall: deferred / (2 * timed.length),
      pendingAtEnd: elma.recall.deferredPending,
    };
  } finally {
    floor?.close();
  }
}

/** The data subject query `i`'s scoped recall is narrowed to: one of the corpus's, in turn. */
const subjectOf = (i: number) => `subject-${i % CORPUS_SUBJECTS}`;

/** `n` distinct corpus queries (English and Chinese), the same on every run. */
export function distinctQueries(n: number): string[] {
  const random = prng(7);
  const texts = new Set<string>();
  while (texts.size < n) texts.add(query(random));
  return [...texts];
}
