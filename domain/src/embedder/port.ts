/**
 * What a text is embedded as. Retrieval models such as e5 encode a query and the passage that answers it
 * differently (`query: ` / `passage: ` prefixes, or the `input_type` field of an embedding API); a model
 * that makes no distinction ignores it.
 */
export type EmbeddingRole = 'query' | 'document';

/** Turns texts into dense vectors. Vectors are L2-normalised, so cosine similarity is a dot product. */
export interface Embedder {
  /** Stable identifier of the model and its version (recorded in each record's lineage). */
  readonly model: string;
  readonly dimensions: number;
  /**
   * True when nearness of vectors means nearness of meaning (a trained model). The hashing embedder is
   * lexical: recall does not fuse its dense route with BM25, whose words it only repeats.
   */
  readonly semantic: boolean;
  /** Embeds in input order; the result has one vector per text. */
  embed(texts: string[], role: EmbeddingRole): Promise<Float32Array[]>;
}
