import { isHan, tokenize, type Embedder, type EmbeddingRole } from '@elma/domain';

export interface HashingEmbedderOptions {
  /** Vector length; 384 by default. */
  dimensions?: number;
}

const WORD_WEIGHT = 1;
const NGRAM_WEIGHT = 0.5;

/*
 * Each feature kind hashes from its own offset basis, so the word "ab" and the
 * character bigram "ab" land in unrelated dimensions.
 */
const FNV_PRIME = 0x01000193;
const SEED_WORD = 0x811c9dc5;
const SEED_NGRAM = 0x050c5d1f;
const SEED_HAN_CHAR = 0x1a47e90b;
const SEED_HAN_BIGRAM = 0x3b9aca07;

/**
 * A deterministic, offline embedder: feature hashing of word tokens and
 * character n-grams into a fixed number of dimensions (the "hashing trick"),
 * with a sign bit per feature so collisions cancel out on average instead of
 * piling up. Words come from the shared tokenizer, so Chinese is cut into
 * words exactly as the BM25 route cuts it; Han characters and bigrams across
 * the whole text are added so that a different word segmentation of the same
 * phrase still overlaps. It captures lexical, not semantic, similarity.
 */
export class HashingEmbedder implements Embedder {
  readonly model = 'hashing-v1';
  readonly dimensions: number;
  readonly semantic = false;

  constructor(options: HashingEmbedderOptions = {}) {
    const dimensions = options.dimensions ?? 384;
    if (!Number.isInteger(dimensions) || dimensions < 8) throw new RangeError('dimensions must be an integer >= 8');
    this.dimensions = dimensions;
  }

  /** Queries and documents are hashed alike. */
  async embed(texts: string[], _role: EmbeddingRole): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text));
  }

  /** Synchronous form of `embed` for one text. */
  embedOne(text: string): Float32Array {
    const vector = new Float32Array(this.dimensions);
    const tokens = tokenize(text);
    let hanRun = '';
    for (const token of tokens) {
      this.add(vector, fnv1a(token, 0, token.length, SEED_WORD), WORD_WEIGHT);
      if (isHan(token)) {
        hanRun += token;
      } else {
        this.addNgrams(vector, token);
      }
    }
    this.addHanFeatures(vector, hanRun);
    return normalise(vector);
  }

  /** Character 2- and 3-grams of a non-Han token, with boundary markers so prefixes and suffixes count. */
  private addNgrams(vector: Float32Array, token: string): void {
    if (token.length < 3) return;
    const padded = `\u0002${token}\u0003`;
    for (let n = 2; n <= 3; n++) {
      for (let start = 0; start + n <= padded.length; start++) {
        this.add(vector, fnv1a(padded, start, start + n, SEED_NGRAM), NGRAM_WEIGHT);
      }
    }
  }

  /**
   * Single Han characters and bigrams over the concatenated Han tokens, so
   * "交付风险" matches "交付 风险" however the segmenter cut either text.
   */
  private addHanFeatures(vector: Float32Array, han: string): void {
    for (let i = 0; i < han.length; i++) {
      this.add(vector, fnv1a(han, i, i + 1, SEED_HAN_CHAR), NGRAM_WEIGHT);
      if (i + 1 < han.length) this.add(vector, fnv1a(han, i, i + 2, SEED_HAN_BIGRAM), NGRAM_WEIGHT);
    }
  }

  private add(vector: Float32Array, hash: number, weight: number): void {
    // Bit 31 is the sign; the remaining bits pick the dimension.
    const sign = hash & 0x80000000 ? -1 : 1;
    vector[(hash & 0x7fffffff) % this.dimensions] += sign * weight;
  }
}

/** FNV-1a 32-bit over the UTF-16 code units of text[start, end). */
function fnv1a(text: string, start: number, end: number, seed: number): number {
  let hash = seed;
  for (let i = start; i < end; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME);
  }
  // Final avalanche: FNV's low bits are weak for short inputs, and we take a modulus.
  hash ^= hash >>> 15;
  hash = Math.imul(hash, 0x2c1b3c6d);
  hash ^= hash >>> 12;
  return hash >>> 0;
}

/** L2-normalises in place; an all-zero vector (no tokens) stays zero. */
export function normalise(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i] * vector[i];
  if (sum === 0) return vector;
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) vector[i] *= inv;
  return vector;
}
