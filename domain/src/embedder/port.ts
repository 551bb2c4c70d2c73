/** Turns texts into dense vectors. Vectors are L2-normalised, so cosine similarity is a dot product. */
export interface Embedder {
  /** Stable identifier of the model (recorded in provenance). */
  readonly model: string;
  readonly dimensions: number;
  /** Embeds in input order; the result has one vector per text. */
  embed(texts: string[]): Promise<Float32Array[]>;
}
