/**
 * Which kind of writing a text is mostly in: `unspaced` (Chinese, Japanese, Thai and the other scripts written
 * without spaces between words, as `tokenize` names them) or `spaced` (English and every other). Recall's fusion
 * ranks each kind on its own before it compares them (`fuseByScript`): a multilingual embedder gives texts in the
 * query's own kind of writing a higher cosine than any in the other, however well those answer.
 */
export type ScriptGroup = 'unspaced' | 'spaced';

const UNSPACED_LETTER =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/gu;
const LETTER = /\p{L}/gu;

/**
 * A text is `unspaced` when at least this share of its letters are: one such character is about a syllable, an
 * English letter a fifth of a word, so a Chinese sentence naming "Kevin Wong" stays Chinese and an English one
 * quoting 王磊 stays English.
 */
export const UNSPACED_SHARE = 0.3;

/** The text's kind of writing; a text without letters (digits, punctuation) is `spaced`. Pure and cheap: two regex scans. */
export function scriptGroupOf(text: string): ScriptGroup {
  const letters = text.match(LETTER)?.length ?? 0;
  if (letters === 0) return 'spaced';
  const unspaced = text.match(UNSPACED_LETTER)?.length ?? 0;
  return unspaced >= UNSPACED_SHARE * letters ? 'unspaced' : 'spaced';
}
