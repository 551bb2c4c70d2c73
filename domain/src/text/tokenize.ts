/**
 * Word tokenisation for Chinese and English alike. `Intl.Segmenter` (ICU word
 * boundaries, dictionary-based for CJK) splits "交付风险很高" into words, which
 * FTS5's own tokenisers cannot do. Both the BM25 route and the hashing embedder
 * use these tokens, so a query and a document are cut the same way.
 */
const segmenter = new Intl.Segmenter('zh', { granularity: 'word' });

const HAN = /\p{Script=Han}/u;

/** Scripts written without spaces between words; only these need ICU's dictionary segmentation. */
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;

/**
 * Words of space-separated scripts, matching ICU's word-like segments for
 * them (UAX #29 rules WB6/7 and WB11/12): letters and digits, with inner
 * apostrophes, dots and colons between letters ("don't", "example.com") and
 * inner number punctuation ("3.14", "1,000") kept inside the word.
 */
const SPACED_WORD = /[\p{L}\p{M}\p{N}_]+(?:(?:[.'’:][\p{L}\p{M}]+)|(?:[.,;'’][\p{N}]+))*/gu;

/**
 * The same text is cut several times on the write path (embedding, FTS,
 * term statistics); segmentation is the costly part, so recent results are
 * remembered. The result depends on the text alone, so this stays pure.
 */
const recent = new Map<string, readonly string[]>();
const RECENT_MAX = 4096;

/** Lower-cased word tokens, punctuation and whitespace dropped, NFKC-normalised (full-width letters fold). */
export function tokenize(text: string): string[] {
  const known = recent.get(text);
  if (known) return [...known];
  const normalised = text.normalize('NFKC').toLowerCase();
  const tokens: string[] = [];
  if (UNSPACED.test(normalised)) {
    for (const part of segmenter.segment(normalised)) {
      if (part.isWordLike) tokens.push(part.segment);
    }
  } else {
    // ICU segmentation costs ~50 µs a sentence; spaced scripts do not need its dictionaries.
    for (const match of normalised.matchAll(SPACED_WORD)) tokens.push(match[0]);
  }
  if (recent.size >= RECENT_MAX) recent.clear();
  recent.set(text, tokens);
  return [...tokens];
}

/** True when the token contains Chinese characters (used for n-gram features). */
export function isHan(token: string): boolean {
  return HAN.test(token);
}
