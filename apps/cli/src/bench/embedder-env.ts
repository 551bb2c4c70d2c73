/**
 * The embedder settings of the environment (ELMA_EMBEDDER and every
 * ELMA_EMBEDDING_* variable), so a bench or an evaluation measures the model
 * the operator chose; every other setting stays at the command's own.
 */
export function embedderEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => /^ELMA_EMBEDD(ER|ING_)/.test(entry[0]) && entry[1] !== undefined),
  );
}
