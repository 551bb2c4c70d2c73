import { CONVERSATION_LIFT, DEFAULT_EVIDENCE_STEPS, type EvidenceSteps } from '@elma/domain';

/**
 * The retrieval variants `npm run eval:locomo` compares, as data: which BM25
 * text analysis the searched index was built with, which routes run, how they
 * are fused, and whether neighbour smoothing re-ranks. The BM25 rows add one
 * improvement at a time, so each row's gain over the previous one is that
 * improvement's.
 */

/** What the BM25 route indexes and queries with (the shape of the domain's `TextAnalysis`). */
export interface Analysis {
  stopWords: boolean;
  stem: boolean;
  dateWords: boolean;
}

/** The analyses the variants need, by name; each becomes one index holding the same records and vectors. */
export const ANALYSES = {
  plain: { stopWords: false, stem: false, dateWords: false },
  stop: { stopWords: true, stem: false, dateWords: false },
  stem: { stopWords: true, stem: true, dateWords: false },
  full: { stopWords: true, stem: true, dateWords: true },
} as const satisfies Record<string, Analysis>;
export type AnalysisName = keyof typeof ANALYSES;

/** A feature the variant needs from the code under evaluation. */
export type Feature = 'textAnalysis' | 'fusion' | 'smoothing' | 'evidence' | 'semantic';

export interface Variant {
  /** Row label, also the `route` of its scores. */
  name: string;
  /** One line on what it is, for the legend. */
  description: string;
  routes: 'bm25' | 'dense' | 'both';
  analysis: AnalysisName;
  /** How the two routes are fused (`routes: 'both'` only). */
  fusion?: 'normalised' | 'rrf';
  smoothing: boolean;
  /** The evidence steps after smoothing (domain/recall/evidence); absent: none, as before the steps existed. */
  steps?: EvidenceSteps;
  needs: Feature[];
}

export const VARIANTS: readonly Variant[] = [
  {
    name: 'bm25',
    description: 'BM25, no stop words, no stemming, no date words',
    routes: 'bm25',
    analysis: 'plain',
    smoothing: false,
    needs: [],
  },
  {
    name: '+stop',
    description: 'BM25 + query stop words (en, zh)',
    routes: 'bm25',
    analysis: 'stop',
    smoothing: false,
    needs: ['textAnalysis'],
  },
  {
    name: '+stem',
    description: 'BM25 + stop words + English stemming',
    routes: 'bm25',
    analysis: 'stem',
    smoothing: false,
    needs: ['textAnalysis'],
  },
  {
    name: '+dates',
    description: "BM25 + stop words + stemming + the memory's date words",
    routes: 'bm25',
    analysis: 'full',
    smoothing: false,
    needs: ['textAnalysis'],
  },
  {
    name: '+smooth',
    description: 'BM25 with every improvement + neighbour smoothing',
    routes: 'bm25',
    analysis: 'full',
    smoothing: true,
    needs: ['textAnalysis', 'smoothing'],
  },
  { name: 'dense', description: 'dense route alone', routes: 'dense', analysis: 'full', smoothing: false, needs: ['semantic'] },
  {
    name: 'fused-rrf',
    description: 'BM25 (all improvements) + dense, reciprocal rank fusion',
    routes: 'both',
    analysis: 'full',
    fusion: 'rrf',
    smoothing: false,
    needs: ['semantic', 'fusion'],
  },
  {
    name: 'fused',
    description: 'BM25 (all improvements) + dense, normalised-score fusion',
    routes: 'both',
    analysis: 'full',
    fusion: 'normalised',
    smoothing: false,
    needs: ['semantic', 'fusion'],
  },
  {
    name: 'fused+smooth',
    description: 'normalised-score fusion + neighbour smoothing',
    routes: 'both',
    analysis: 'full',
    fusion: 'normalised',
    smoothing: true,
    needs: ['semantic', 'fusion', 'smoothing'],
  },
  // Each evidence step alone on top of fused+smooth, so its paired gain over fused+smooth is the step's.
  ...(
    [
      ['+conversation', 'conversation lift on the candidates as found', { conversation: CONVERSATION_LIFT }],
      [
        '+conversation@3x',
        'conversation lift over all smoothing ranked (up to 3x the limit), as recall by default',
        DEFAULT_EVIDENCE_STEPS,
      ],
      [
        '+spread',
        'spread over conversations, discount 0.85 per memory of one already ranked (pool 3x)',
        { spread: { decay: 0.85 }, pool: 3 },
      ],
      [
        '+expansion',
        'expansion: the 8 nearest memories of the 3 best hits in other conversations (pool 3x)',
        { expansion: { seeds: 3, perSeed: 8, weight: 0.3 }, pool: 3 },
      ],
      [
        '+feedback',
        'dense feedback: the query vector moved halfway to the 3 best hits, searched again (pool 3x)',
        { feedback: { seeds: 3, weight: 0.5 }, pool: 3 },
      ],
    ] as const
  ).map(([name, description, steps]): Variant => ({
    name,
    description: `fused+smooth + ${description}`,
    routes: 'both',
    analysis: 'full',
    fusion: 'normalised',
    smoothing: true,
    steps,
    needs: ['semantic', 'fusion', 'smoothing', 'evidence'],
  })),
];

/** Gains printed with their intervals: each improvement over the step before it, fusion over its parts. */
export const GAIN_PAIRS: readonly (readonly [string, string])[] = [
  ['+stop', 'bm25'],
  ['+stem', '+stop'],
  ['+dates', '+stem'],
  ['+smooth', '+dates'],
  ['+smooth', 'bm25'],
  ['fused', 'fused-rrf'],
  ['fused', '+dates'],
  ['fused+smooth', '+smooth'],
  ['fused+smooth', 'bm25'],
  ['+conversation', 'fused+smooth'],
  ['+conversation@3x', 'fused+smooth'],
  ['+spread', 'fused+smooth'],
  ['+expansion', 'fused+smooth'],
  ['+feedback', 'fused+smooth'],
];

/** Why a variant cannot run here, or undefined when it can. */
export function unavailable(variant: Variant, has: Readonly<Record<Feature, boolean>>): string | undefined {
  const missing = variant.needs.filter((feature) => !has[feature]);
  if (missing.length === 0) return undefined;
  return missing.map((feature) => (feature === 'semantic' ? 'the embedder is not semantic' : `${feature} not available`)).join('; ');
}
