/**
 * Word tokenisation for Chinese and English alike. `Intl.Segmenter` (ICU word
 * boundaries, dictionary-based for CJK) splits "交付风险很高" into words, which
 * FTS5's own tokenisers cannot do. Both the BM25 route and the hashing embedder
 * use these tokens, so a query and a document are cut the same way.
 */
const segmenter = new Intl.Segmenter('zh', { granularity: 'word' });

const HAN = /\p{Script=Han}/u;

/** Lower-cased word tokens, punctuation and whitespace dropped, NFKC-normalised (full-width letters fold). */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const part of segmenter.segment(text.normalize('NFKC').toLowerCase())) {
    if (part.isWordLike) tokens.push(part.segment);
  }
  return tokens;
}

/** True when the token contains Chinese characters (used for n-gram features). */
export function isHan(token: string): boolean {
  return HAN.test(token);
}

/** Rough token count for budgeting: about 4 characters per English token, one per Han character. */
export function estimateTokens(text: string): number {
  let han = 0;
  for (const ch of text) if (HAN.test(ch)) han += 1;
  const rest = text.length - han;
  return Math.max(1, han + Math.ceil(rest / 4));
}
