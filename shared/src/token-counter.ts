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
 * are remembered in two generations: new counts go to the young one, a count
 * found in the old one moves back to the young one, and when the young one
 * holds half the limits it becomes the old one and the old one is dropped.
 * Every step is O(1) (an evicting Map walks the holes its deletions leave at
 * its front, which cost more than the counting once most texts are new), and
 * both the number of texts and their total length stay bounded, since a
 * memory may be 100,000 characters.
 */
export function createTokenCounter(limits: TokenCounterLimits = { maxEntries: 20_000, maxChars: 8_000_000 }): (text: string) => number {
  let young = new Map<string, number>();
  let old = new Map<string, number>();
  let youngChars = 0;
  return (text) => {
    const remembered = young.get(text);
    if (remembered !== undefined) return remembered;
    const count = old.get(text) ?? countO200k(text, PLAIN_TEXT);
    if (text.length > limits.maxChars / 8) return count;
    young.set(text, count);
    youngChars += text.length;
    if (young.size >= limits.maxEntries / 2 || youngChars >= limits.maxChars / 2) {
      old = young;
      young = new Map();
      youngChars = 0;
    }
    return count;
  };
}

/** Tokens of a text for an o200k model, memoised. */
export const countTokens = createTokenCounter();
