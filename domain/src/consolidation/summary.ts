import { tokenize } from '../text/tokenize';

export interface SummarySource {
  /** The memory (or event) the sentence comes from; a summary cites every source it uses. */
  id: string;
  text: string;
}

export interface ExtractiveSummary {
  /** Chosen sentences in their original order. */
  sentences: { sourceId: string; text: string }[];
  /** The sources the summary drew on (its lineage). */
  sourceIds: string[];
  /** Share of the session's distinct words the summary covers, 0..1. */
  coverage: number;
}

/** Sentence ends in English and Chinese text; the end mark stays with its sentence. */
const SENTENCE = /[^.!?。！？\n]+[.!?。！？]*/gu;

/**
 * Extractive session summary (docs/architecture.md#consolidation): greedily picks the sentence that
 * adds the most words not yet covered, per word of its own length, until
 * `maxSentences` are chosen or nothing new is added. No model: the summary
 * only ever repeats what was said, and cites where.
 */
export function extractiveSummary(sources: SummarySource[], maxSentences: number): ExtractiveSummary {
  const candidates = sources.flatMap((source) =>
    [...source.text.matchAll(SENTENCE)]
      .map((m) => m[0].trim())
      .filter((sentence) => sentence.length > 0)
      .map((sentence) => ({ sourceId: source.id, text: sentence, words: new Set(tokenize(sentence)) })),
  );
  const universe = new Set(candidates.flatMap((c) => [...c.words]));
  const covered = new Set<string>();
  const chosen = new Set<number>();
  while (chosen.size < maxSentences) {
    let best = -1;
    let bestScore = 0;
    candidates.forEach((candidate, index) => {
      if (chosen.has(index) || candidate.words.size === 0) return;
      let fresh = 0;
      for (const word of candidate.words) if (!covered.has(word)) fresh++;
      const score = fresh / Math.sqrt(candidate.words.size);
      if (fresh > 0 && score > bestScore) {
        best = index;
        bestScore = score;
      }
    });
    if (best < 0) break;
    chosen.add(best);
    for (const word of candidates[best].words) covered.add(word);
  }
  const sentences = [...chosen].sort((a, b) => a - b).map((i) => ({ sourceId: candidates[i].sourceId, text: candidates[i].text }));
  return {
    sentences,
    sourceIds: [...new Set(sentences.map((s) => s.sourceId))],
    coverage: universe.size === 0 ? 0 : covered.size / universe.size,
  };
}
