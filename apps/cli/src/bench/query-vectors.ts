import type { Embedder, EmbeddingRole } from '@elma/domain';

/**
 * The engine figures' embedder: another embedder's vectors (the hashing one:
 * cheap, offline, the same on every run), with two changes for measuring.
 *
 * - It says it is semantic, so that recall runs its dense route and fuses it
 *   with BM25 as it does with a real model (with a lexical embedder recall
 *   skips that route, and would be timed doing less than the floor).
 * - Query vectors are computed ahead (`precompute`, timed on their own line):
 *   recall then finds its query's vector made, as the floor and the bare
 *   search are given it, so the recall figures exclude embedding the query.
 *   A query not precomputed is embedded when asked.
 */
export class PrecomputedQueryEmbedder implements Embedder {
  readonly semantic = true;
  private readonly queries = new Map<string, Float32Array>();

  constructor(private readonly inner: Embedder) {}

  get model(): string {
    return this.inner.model;
  }

  get dimensions(): number {
    return this.inner.dimensions;
  }

  /** Embeds each query alone, as recall would, and keeps its vector; returns the milliseconds of each. */
  async precompute(texts: readonly string[]): Promise<number[]> {
    const times: number[] = [];
    for (const text of texts) {
      const start = performance.now();
      const [vector] = await this.inner.embed([text], 'query');
      times.push(performance.now() - start);
      this.queries.set(text, vector);
    }
    return times;
  }

  /** The precomputed vector of a query (undefined if it was not precomputed). */
  vectorOf(text: string): Float32Array | undefined {
    return this.queries.get(text);
  }

  async embed(texts: string[], role: EmbeddingRole): Promise<Float32Array[]> {
    if (role === 'query' && texts.every((text) => this.queries.has(text))) return texts.map((text) => this.queries.get(text)!);
    return this.inner.embed(texts, role);
  }
}
