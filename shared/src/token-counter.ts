import { countTokens as countO200k } from 'gpt-tokenizer';

/**
 * Special-token markers inside memory text ("<|endoftext|>") are counted as
 * the plain text they are: a memory may quote them, and the tokenizer's
 * default would throw on them instead.
 */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

export interface TokenCounterLimits {
  /** Most texts remembered. */
  maxEntries: number;
  /** Most characters of remembered texts in total; a text longer than an eighth of it is counted but not remembered. */
  maxChars: number;
}

/**
 * Token counts as o200k models (the GPT-4o family) count them, Chinese and
 * English alike. The same memories come back recall after recall, so counts
 * are remembered, least recently used first out; both the number of texts and
 * their total length are bounded, since a memory may be 100,000 characters.
 */
export function createTokenCounter(limits: TokenCounterLimits = { maxEntries: 20_000, maxChars: 8_000_000 }): (text: string) => number {
  const known = new Map<string, number>();
  let chars = 0;
  return (text) => {
    const cached = known.get(text);
    if (cached !== undefined) {
      // Re-inserting moves the text to the young end of the Map's insertion order.
      known.delete(text);
      known.set(text, cached);
      return cached;
    }
    const count = countO200k(text, PLAIN_TEXT);
    if (text.length > limits.maxChars / 8) return count;
    known.set(text, count);
    chars += text.length;
    // Only when over a limit: an iterator's first step walks past the holes deletions left at the Map's front.
    if (known.size <= limits.maxEntries && chars <= limits.maxChars) return count;
    for (const [oldest] of known) {
      if (known.size <= limits.maxEntries && chars <= limits.maxChars) break;
      known.delete(oldest);
      chars -= oldest.length;
    }
    return count;
  };
}

/** Tokens of a text for an o200k model, memoised. */
export const countTokens = createTokenCounter();
