import type { Row } from './metrics';

/**
 * What recall as shipped must reach on the bilingual test set, in each part (open and sealed) alike: the share of
 * questions whose memory is among the first three, across languages and within one language.
 */
export const BILINGUAL_TARGETS = { crossLanguageTop3: 0.9, sameLanguageTop3: 0.95 } as const;

/**
 * The gate. false while recall is being tuned for these targets: the eval suite then reports the shortfall and
 * passes; true makes it fail on it. Flip it when the tuning lands.
 */
export const ENFORCE_TARGETS = false;

/**
 * What recall as shipped may not fall below, whatever ENFORCE_TARGETS says: the figures the cross-language fusion
 * landed with (open 91.1 %, sealed 89.7 % across languages; 100 % within one), less about three questions of noise
 * across languages. Always enforced: a change that loses the cross-language answers fails the suite.
 */
export const BILINGUAL_FLOOR = { crossLanguageTop3: 0.87, sameLanguageTop3: 0.95 } as const;

/** Each target recall as shipped misses, one line each (empty when every target is met). */
export function shortfalls(
  rows: readonly Row[],
  thresholds: { crossLanguageTop3: number; sameLanguageTop3: number } = BILINGUAL_TARGETS,
  variant = 'shipped',
): string[] {
  const missed: string[] = [];
  for (const row of rows) {
    if (row.variant !== variant) continue;
    const target = row.group === 'cross' ? thresholds.crossLanguageTop3 : row.group === 'same' ? thresholds.sameLanguageTop3 : undefined;
    if (target !== undefined && row.top3 < target)
      missed.push(`${row.split} ${row.group}-language top-3 ${(row.top3 * 100).toFixed(1)} % < ${target * 100} % (${row.n} questions)`);
  }
  return missed;
}
