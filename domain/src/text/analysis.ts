import { stem } from 'porter2';
import { FORMAT_VERSIONS } from '../shared/formats';
import { entityToken } from '../memory/kinds';
import type { MemoryRecord } from '../memory/record';
import { dateWords } from './date-words';
import { isStopWord } from './stop-words';
import { tokenize } from './tokenize';

/**
 * What the BM25 route does to words beyond cutting them (`tokenize`):
 * - `stopWords`: drop English and Chinese stop words from queries (never from documents);
 * - `stem`: reduce English (Latin-script) words to their Porter2 stem, in documents and queries alike;
 * - `dateWords`: index the words of the memory's valid time (an episode's `occurredAt`), see `dateText`.
 */
export interface TextAnalysis {
  stopWords: boolean;
  stem: boolean;
  dateWords: boolean;
}

export const DEFAULT_TEXT_ANALYSIS: TextAnalysis = Object.freeze({ stopWords: true, stem: true, dateWords: true });

/**
 * Bumped (as `FORMAT_VERSIONS.tokenisation`) whenever `documentTerms` would give other terms for the same
 * record and options (a stemmer, tokenizer or date format change), so an index built before is re-derived
 * rather than silently mixed with the new terms.
 */
const DOCUMENT_TERMS_REVISION: number = FORMAT_VERSIONS.tokenisation;

/**
 * A number an index stores beside its document terms, naming how they were
 * made: equal numbers mean equal `documentTerms`. Stop words do not enter it
 * (they apply to queries only). 0 is never returned: it stands for the terms
 * of releases before this analysis existed.
 */
export function documentAnalysisCode(analysis: TextAnalysis): number {
  return analysisCodeAt(analysis, DOCUMENT_TERMS_REVISION);
}

/** `documentAnalysisCode` under another tokenisation format version (a test simulating another build). */
export function analysisCodeAt(analysis: TextAnalysis, revision: number): number {
  return revision * 4 + (analysis.stem ? 1 : 0) + (analysis.dateWords ? 2 : 0);
}

/**
 * The terms a record is found by: the words of its text and of a fact's
 * entity, attribute and value, the words of its valid day (`dateWords`), all
 * stemmed (`stem`); and, for an edge, one token per endpoint (`entityToken`,
 * never stemmed), by which recall follows relations. Speaker names in the
 * text ("Caroline: ...") are words like any other and stay.
 */
export function documentTerms(record: MemoryRecord, analysis: TextAnalysis): string[] {
  const { fact, relation } = record.content;
  const words = tokenize(fact ? `${record.content.text}\n${fact.entity} ${fact.attribute} ${fact.value}` : record.content.text);
  if (analysis.dateWords) words.push(...dateWords(record.validFrom));
  const terms = analysis.stem ? words.map(stemWord) : words;
  if (relation) terms.push(entityToken(relation.from), entityToken(relation.to));
  return terms;
}

/**
 * The terms a query searches for, in query order (repeats kept). Stop words
 * go unless the query is made of nothing else (then all its words are kept:
 * a query never becomes empty through this), and a stop word written
 * capitalised inside a sentence is read as a name and kept ("did Will call").
 */
export function queryTerms(text: string, analysis: TextAnalysis): string[] {
  const words = tokenize(text);
  let kept = words;
  if (analysis.stopWords) {
    const names = capitalisedWords(text);
    const content = words.filter((w) => !isStopWord(w) || names.has(w));
    if (content.length > 0) kept = content;
  }
  return analysis.stem ? kept.map(stemWord) : kept;
}

/** English and other Latin-script words; digits, Han and every other script pass through unchanged. */
const LATIN_WORD = /^[\p{Script=Latin}'’]*\p{Script=Latin}[\p{Script=Latin}'’]*$/u;

/** The Porter2 (Snowball English) stem of a lower-cased Latin-script word; any other token as it is. */
export function stemWord(token: string): string {
  return LATIN_WORD.test(token) ? stem(token.replaceAll('’', "'")) : token;
}

const WORD_OR_STOP = /[\p{L}\p{M}\p{N}_'’]+|[.!?。！？\n]/gu;

/** Lower-cased words written with a capital other than at a sentence's start ("I" and "I'm" excepted). */
function capitalisedWords(text: string): Set<string> {
  const names = new Set<string>();
  let sentenceStart = true;
  for (const [part] of text.normalize('NFKC').matchAll(WORD_OR_STOP)) {
    if (/^[.!?。！？\n]$/u.test(part)) {
      sentenceStart = true;
      continue;
    }
    if (!sentenceStart && /^\p{Lu}/u.test(part) && !/^I(?:['’]|$)/u.test(part)) names.add(part.toLowerCase());
    sentenceStart = false;
  }
  return names;
}
