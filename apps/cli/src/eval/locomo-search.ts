import { join } from 'node:path';
import { Retrieval } from '@elma/application';
import type { EvidenceSteps, Fusion, HybridQuery, IndexedMemory, MemoryIndex, SearchHit } from '@elma/domain';
import { SqliteMemoryIndex } from '@elma/infra';
import type { Elma } from '@elma/runtime';
import type { Analysis, Feature, Variant } from './locomo-variants';

/**
 * Where the evaluation meets the code it measures: the variant indexes (same
 * records and vectors, another BM25 text analysis) and one search per
 * variant. The features of the index that a variant needs are listed in
 * `FEATURES`; a variant whose feature is missing prints "not available".
 */
export const FEATURES: Readonly<Record<Exclude<Feature, 'semantic'>, boolean>> = {
  textAnalysis: true,
  fusion: true,
  smoothing: true,
  evidence: true,
};

/** Whether a turn's conversation session reaches the event (and so the record). */
export const SESSIONS = true;

const COPY_BATCH = 500;

/** An extra index in `dir` that analyses text as `analysis`, holding the given memories. */
export async function variantIndex(
  dir: string,
  embedder: { dimensions: number; model: string },
  analysis: Analysis,
  memories: readonly IndexedMemory[],
  tenant: string,
): Promise<SqliteMemoryIndex> {
  const { dimensions, model } = embedder;
  const index = await SqliteMemoryIndex.open({ dir, dimensions, model, text: analysis });
  for (let i = 0; i < memories.length; i += COPY_BATCH) await index.upsert(tenant, memories.slice(i, i + COPY_BATCH));
  return index;
}

/** Every current record of the tenant with its vector, as the projection left them. */
export async function indexedMemories(elma: Elma, tenant: string): Promise<IndexedMemory[]> {
  const memories: IndexedMemory[] = [];
  for await (const record of elma.index.records(tenant)) {
    const memory = await elma.index.get(tenant, record.id);
    if (memory) memories.push(memory);
  }
  return memories;
}

/** Waits until the embedding stage has given every memory of the tenant its vector (the dense route is measured then). */
export async function waitForEmbeddings(elma: Elma, tenant: string, timeoutMs = 60 * 60_000): Promise<void> {
  await elma.embeddings.waitForEmbedded(tenant, timeoutMs);
  const lag = await elma.index.embeddingLag(tenant);
  if (lag.reindexNeeded.length > 0) throw new Error(`the index holds vectors of another model than ${elma.embedder.model}`);
  if (lag.pending > 0) throw new Error(`${lag.pending} memories still without a vector`);
}

export function variantDir(workDir: string, name: string): string {
  return join(workDir, 'variants', name);
}

/** How recall ranks, as configured (ElmaConfig.recall): the fusion and the smoothing factor. */
export interface Ranking {
  fusion: Fusion;
  smoothing: number;
}

/**
 * One search as the variant does it, through the application's `Retrieval`
 * (what recall uses): its routes; the configured fusion, or the same with RRF
 * for the `rrf` variant; smoothing by the configured factor when the variant
 * smooths; the variant's evidence steps (none for the rows before them). The dense route alone is ranked by
 * cosine with no floor.
 */
export async function searchVariant(
  index: MemoryIndex,
  variant: Variant,
  ranking: Ranking,
  query: Omit<HybridQuery, 'text' | 'vector'> & { text: string; vector: Float32Array; steps?: EvidenceSteps },
): Promise<SearchHit[]> {
  const { text, vector, ...rest } = query;
  const retrieval = new Retrieval(index, { smoothing: ranking.smoothing });
  const smoothing = variant.smoothing;
  // The variant's own steps, none unless it names them: the rows before the steps measure the path without them.
  const steps = variant.steps ?? {};
  switch (variant.routes) {
    case 'bm25':
      // Recall's own fusion: BM25 scores normalised (smoothing adds shares of scores, not of ranks).
      return retrieval.search({ ...rest, steps, text, fusion: ranking.fusion, smoothing });
    case 'dense':
      return retrieval.search({ ...rest, steps, text: '', vector, fusion: { ...ranking.fusion, denseFloor: -1 }, smoothing });
    case 'both':
      return retrieval.search({
        ...rest,
        steps,
        text,
        vector,
        fusion: { ...ranking.fusion, method: variant.fusion ?? ranking.fusion.method },
        smoothing,
      });
    default: {
      const _exhaustive: never = variant.routes;
      return _exhaustive;
    }
  }
}
