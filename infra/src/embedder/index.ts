export { HashingEmbedder, normalise, type HashingEmbedderOptions } from './hashing';
export { OpenAiCompatibleEmbedder, EmbeddingFailed, type OpenAiCompatibleEmbedderOptions } from './openai-compatible';
