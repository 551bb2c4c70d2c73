import type { BilingualRun } from './run';
import { VARIANTS } from './run';
import { GROUPS, type Group, type Row } from './metrics';
import { BILINGUAL_TARGETS, ENFORCE_TARGETS, shortfalls } from './targets';

const GROUP_LABELS: Record<Group, string> = {
  'en→zh': 'en→zh',
  'zh→en': 'zh→en',
  'en→en': 'en→en',
  'zh→zh': 'zh→zh',
  cross: '**cross-language**',
  same: '**same-language**',
};

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

/** One markdown row per split and group: n, then top-3, top-1 and MRR of each variant. */
export function markdownTable(rows: readonly Row[]): string {
  const header = ['split', 'direction', 'n', ...VARIANTS.flatMap((v) => [`${v.label} top-3`, 'top-1', 'MRR'])];
  const lines = [`| ${header.join(' | ')} |`, `| ${header.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`];
  for (const split of [...new Set(rows.map((r) => r.split))])
    for (const group of GROUPS) {
      const of = rows.filter((r) => r.split === split && r.group === group);
      if (of.length === 0) continue;
      const cells = VARIANTS.flatMap((v) => {
        const row = of.find((r) => r.variant === v.name);
        return row ? [pct(row.top3), pct(row.top1), row.mrr.toFixed(3)] : ['', '', ''];
      });
      lines.push(`| ${[split, GROUP_LABELS[group], String(of[0].n), ...cells].join(' | ')} |`);
    }
  return lines.join('\n');
}

/** The run as printed: what was measured and how long it took, the table, and the targets. */
export function summaryText(run: BilingualRun): string {
  const { seconds } = run;
  const missed = shortfalls(run.rows);
  return [
    `Bilingual recall, ${run.splits.join(' + ')}: ${run.tenants} tenants, ${run.memories} memories, ${run.questions} questions; ` +
      `embedder ${run.embedder}${run.semantic ? '' : ' (not semantic: the dense route finds nothing)'}`,
    `wall ${seconds.wall.toFixed(1)} s: model start ${seconds.model.toFixed(1)} s, question vectors ${seconds.queryVectors.toFixed(1)} s, ingest ${seconds.ingest.toFixed(1)} s, ` +
      `projection and vectors ${seconds.projection.toFixed(1)} s, ${run.answers.length} recalls ${seconds.queries.toFixed(1)} s`,
    '',
    markdownTable(run.rows),
    '',
    `targets (recall as shipped, each split): cross-language top-3 ≥ ${pct(BILINGUAL_TARGETS.crossLanguageTop3)}, ` +
      `same-language top-3 ≥ ${pct(BILINGUAL_TARGETS.sameLanguageTop3)} (${ENFORCE_TARGETS ? 'enforced' : 'reported, not enforced'})`,
    ...(missed.length === 0 ? ['  all met'] : missed.map((line) => `  missed: ${line}`)),
  ].join('\n');
}
