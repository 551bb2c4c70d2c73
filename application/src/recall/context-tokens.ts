import { countTokens } from '@elma/shared';

/** How a citation line starts (`renderContext`): four spaces and its bracket. */
const CITATION_START = '    [';
const CITATION_SEPARATOR = ' | ';

/**
 * Tokens of the rendered context, line by line: an item line is its marker
 * plus the item's known count, a citation line is counted part by part
 * (`citationTokens`), other lines (disagreements) are counted, and each line
 * break is one more. Tokenising the whole context, new on every recall, cost
 * more than the rest of packing. An item quoted as data is not its text alone
 * (marker, quotes, escapes): its line is counted.
 */
export function contextTokens(context: string, items: { tokens: number; citation: { instructionLike: boolean } }[]): number {
  let item = 0;
  return context.split('\n').reduce((sum, line, i) => {
    const marker = `[${item + 1}] `;
    const next = items[item];
    const isItem = next !== undefined && line.startsWith(marker);
    const counted = isItem
      ? next.citation.instructionLike
        ? countTokens(line)
        : countTokens(marker) + next.tokens
      : line.startsWith(CITATION_START) && line.endsWith(']')
        ? citationTokens(line)
        : countTokens(line);
    if (isItem) item++;
    return sum + counted + (i > 0 ? 1 : 0);
  }, 0);
}

/**
 * A citation line's tokens (`    [kind | valid … | recorded … | confidence … | source …]`), the sum
 * of its parts' (each ` | ` with the part after it, and the closing bracket): o200k splits text into
 * pieces before merging, and no piece spans a ` | ` or the bracket after a word or number, so the sum
 * is the line's count (context-tokens.unit.spec.ts holds the two equal). The parts that repeat from
 * line to line (kind, confidence, source) then come from the counter's memory.
 */
export function citationTokens(line: string): number {
  const parts = line.slice(0, -1).split(CITATION_SEPARATOR);
  return parts.reduce((sum, part, i) => sum + countTokens(i === 0 ? part : CITATION_SEPARATOR + part), countTokens(']'));
}
