import { join } from 'node:path';
import type { HybridQuery, IndexedMemory, MemoryIndex, SearchHit } from '@elma/domain';
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
  textAnalysis: false,
  fusion: false,
  smoothing: false,
};

/** Whether a turn's conversation session reaches the event (and so the record). */
export const SESSIONS = false;

const COPY_BATCH = 500;

/** An extra index in `dir` that analyses text as `analysis`, holding the given memories. */
export async function variantIndex(
  dir: string,
  dimensions: number,
  _analysis: Analysis,
  memories: readonly IndexedMemory[],
  tenant: string,
): Promise<SqliteMemoryIndex> {
  const index = await SqliteMemoryIndex.open({ dir, dimensions });
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

/** Waits until every memory of the projection has its vector (a no-op while embedding happens in the projection). */
export async function waitForEmbeddings(_elma: Elma, _tenant: string): Promise<void> {}

export function variantDir(workDir: string, name: string): string {
  return join(workDir, 'variants', name);
}

/** One search as the variant does it: its routes, fusion and smoothing. */
export async function searchVariant(
  index: MemoryIndex,
  variant: Variant,
  query: Omit<HybridQuery, 'text' | 'vector'> & { text: string; vector: Float32Array },
): Promise<SearchHit[]> {
  const { text, vector, ...rest } = query;
  switch (variant.routes) {
    case 'bm25':
      return index.search({ ...rest, text });
    case 'dense':
      return index.search({ ...rest, text: '', vector });
    case 'both':
      return index.search({ ...rest, text, vector });
    default: {
      const _exhaustive: never = variant.routes;
      return _exhaustive;
    }
  }
}
