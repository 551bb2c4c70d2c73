import { z } from 'zod';
import type { RunResult } from './runner';
import { METRICS, failureSamples, pairedDelta, scanFindings, summarise, truncate, type MetricDef, type Summary } from './summary';
import { lineChart } from './svg';
import type { SystemSpec, Workload, WorkloadName } from './types';

/**
 * docs/evaluation.md and its two plots, from the runs alone: every cell is
 * a measurement, an explicit "not run (reason)", "needs model" or "same as
 * <row>". A cell the run could not fill says so ("no probes", "error"), and
 * `problems` lists it: `npm run eval -- --quick` fails on any.
 */

export const TABLE1_ROWS = ['B1', 'B2', 'B3', 'B4', 'B5', 'B6', 'B7', 'B8', 'ELMA'];
export const ABLATION_ROWS = ['A1', 'A2', 'A3', 'A4', 'A5', 'A6', 'A7', 'A8'];
export const TABLE1_COLUMNS = ['success', 'factRecall', 'temporal', 'conflict', 'stale', 'unauthorised', 'erasure', 'tokens', 'p95'];
export const TABLE2_COLUMNS = ['citation', 'poisoned', 'injected', 'audit', 'storage', 'flagFp'];
export const ABLATION_COLUMNS = [
  'factRecall',
  'temporal',
  'conflict',
  'stale',
  'citation',
  'unauthorised',
  'erasure',
  'poisoned',
  'injected',
  'audit',
  'tokens',
  'p95',
];
export const SAFETY_METRICS = ['unauthorised', 'erasure', 'poisoned', 'injected', 'stale'] as const;
/** What the ablations are expected to move (paper §7.6), printed next to each row. */
const ABLATION_REMOVES: Record<string, string> = {
  A1: 'governance plane (policy, audit, erasure closure)',
  A2: 'bitemporal validity',
  A3: 'disputes and conflict resolution',
  A4: 'asynchronous consolidation and summaries',
  A5: 'provenance and taint propagation',
  A6: 'policy pushdown → post-filtering',
  A7: 'multi-route recall → dense only',
  A8: 'context packing → plain concatenation',
};

/** The JSON `elma eval-locomo --json` writes, as far as the report reads it. */
export const LocomoJson = z.object({
  samples: z.array(z.string()),
  embedder: z.string(),
  turns: z.number(),
  questions: z.object({ evaluated: z.number() }),
  rows: z.array(
    z.object({
      category: z.union([z.number(), z.literal('all')]),
      categoryName: z.string().optional(),
      route: z.string(),
      n: z.number(),
      recall5: z.number(),
      recall10: z.number(),
      recall20: z.number(),
      mrr: z.number(),
      recall10Interval: z.object({ low: z.number(), high: z.number() }).optional(),
    }),
  ),
  /** Paired R@10 gains over all questions (absent in reports written before they were). */
  gains: z
    .array(z.object({ route: z.string(), over: z.string(), n: z.number(), mean: z.number(), low: z.number(), high: z.number() }))
    .optional(),
});
export type LocomoJson = z.infer<typeof LocomoJson>;

export interface ReportInput {
  runs: RunResult[];
  /** Every row's spec, runnable or not, in any order. */
  systems: SystemSpec[];
  /** Rows that were not selected (`--systems`) or whose module is not in this build: row id → why. */
  absent: Record<string, string>;
  /** One generated workload per name (the first seed's), for the sizes table. */
  workloads: Workload[];
  seeds: number[];
  scale: number;
  budget: number;
  sweep: { budgets: number[]; systems: string[] };
  /** The task model's name, when one judged the answers. */
  taskModel?: string;
  /** Where W5's attack strings come from (package, licence) and what is synthetic. */
  attackSource: string;
  locomo: { json?: LocomoJson; note: string };
  /** The bilingual recall figures as `eval-bilingual` prints them (absent: `note` says why). */
  bilingual?: { summary?: string; note: string };
  embedder: string;
  /** Texts the model embedded, and requests the memo answered (each text is embedded once per process). */
  embedded?: { embedded: number; remembered: number };
  command: string;
  machine: { cpus: number; cpuModel: string; load: number[]; node: string; platform: string };
  seconds: number;
  date: string;
}

export interface Report {
  markdown: string;
  pareto: string;
  budget: string;
  /** Cells the run could not fill ("table / row / column: cell"). */
  problems: string[];
  /** Cells of the checked tables that hold a measurement or an explicit "not run" / "needs model" / "same as". */
  filled: number;
}

type Table = { title: string; header: string[]; rows: string[][] };

const FILLED_OK = /^(not run|needs model|same as |nothing packed)/;

/**
 * Why a metric has no value: citation correctness is undefined for a row
 * whose contexts were all empty ("nothing packed", a finding: e.g. the dense
 * route alone over a lexical embedder); any other gap is "no probes".
 */
function unmeasured(metricId: string, runs: readonly RunResult[]): string {
  const asked = runs.some((r) => r.probes.length > 0);
  return metricId === 'citation' && asked && runs.every((r) => r.probes.every((p) => p.scores.citation === undefined))
    ? 'nothing packed'
    : 'no probes';
}

function formatValue(format: MetricDef['format'], value: number): string {
  switch (format) {
    case 'rate':
      return value.toFixed(2);
    case 'count':
    case 'bytes':
      return value.toFixed(0);
    case 'ms':
      return value.toFixed(1);
  }
}

const cell = (metric: MetricDef, s: Summary) =>
  `${formatValue(metric.format, s.median)} [${formatValue(metric.format, s.low)}, ${formatValue(metric.format, s.high)}]`;

const signed = (metric: MetricDef, v: number) => `${v >= 0 ? '+' : '−'}${formatValue(metric.format, Math.abs(v))}`;

const arrow = (metric: MetricDef) => (metric.direction === 'up' ? '↑' : '↓');

export function buildReport(input: ReportInput): Report {
  const specs = new Map(input.systems.map((s) => [s.id, s]));
  const atBudget = (id: string, budget = input.budget) => {
    const source = specs.get(id)?.sameAs ?? id;
    return input.runs.filter((r) => r.system === source && r.budget === budget);
  };
  /** Why a row has no numbers, or undefined when it ran. */
  const rowNotRun = (id: string): string | undefined => {
    const spec = specs.get(id);
    if (input.absent[id]) return `not run (${input.absent[id]})`;
    if (!spec) return 'not run (no such system in this build)';
    if (spec.notRun) return `not run: ${spec.notRun}`;
    return undefined;
  };
  const label = (id: string) => specs.get(id)?.label ?? id;

  const metricCell = (id: string, metricId: string): string => {
    const metric = METRICS[metricId];
    const runs = atBudget(id);
    if (runs.length > 0 && runs.every((r) => r.error)) return `error: ${truncate(runs[0].error!, 80)}`;
    if (metricId === 'success' && !input.taskModel) return 'needs model';
    const s = summarise(metric, runs);
    return s ? cell(metric, s) : unmeasured(metricId, runs);
  };

  const systemRows = (ids: string[], columns: string[]) =>
    ids.map((id) => {
      const why = rowNotRun(id);
      const same = specs.get(id)?.sameAs;
      if (why) return [label(id), why, ...columns.slice(1).map(() => '')];
      return [label(id) + (same ? ` (same as ${same})` : ''), ...columns.map((m) => metricCell(id, m))];
    });

  const header = (columns: string[]) => ['system', ...columns.map((m) => `${METRICS[m].label} ${arrow(METRICS[m])}`)];
  const table1: Table = { title: 'Table 1', header: header(TABLE1_COLUMNS), rows: systemRows(TABLE1_ROWS, TABLE1_COLUMNS) };
  const table2: Table = { title: 'Table 1b', header: header(TABLE2_COLUMNS), rows: systemRows(TABLE1_ROWS, TABLE2_COLUMNS) };

  const elmaRuns = atBudget('ELMA');
  const ablation: Table = {
    title: 'Ablations',
    header: ['row', 'removed', ...ABLATION_COLUMNS.map((m) => `Δ ${METRICS[m].label} ${arrow(METRICS[m])}`)],
    rows: ABLATION_ROWS.map((id) => {
      const why = rowNotRun(id) ?? (rowNotRun('ELMA') ? 'not run (ELMA complete did not run)' : undefined);
      const same = specs.get(id)?.sameAs;
      const name = `${id}${same ? ` (same as ${same}, reported once)` : ''}`;
      if (why) return [name, ABLATION_REMOVES[id], why, ...ABLATION_COLUMNS.slice(1).map(() => '')];
      const runs = atBudget(id);
      return [
        name,
        ABLATION_REMOVES[id],
        ...ABLATION_COLUMNS.map((m) => {
          if (runs.length > 0 && runs.every((r) => r.error)) return `error: ${truncate(runs[0].error!, 80)}`;
          const d = pairedDelta(METRICS[m], runs, elmaRuns);
          return d ? `${signed(METRICS[m], d.mean)} [${signed(METRICS[m], d.low)}, ${signed(METRICS[m], d.high)}]` : unmeasured(m, runs);
        }),
      ];
    }),
  };

  const ran = (id: string) => !rowNotRun(id) && atBudget(id).length > 0;
  const defenceRows = [...TABLE1_ROWS, ...ABLATION_ROWS].filter((id) => ran(id) && !specs.get(id)?.sameAs);
  const only = (runs: RunResult[], names: WorkloadName[]) => runs.filter((r) => names.includes(r.workload));
  const w5Ran = input.workloads.some((w) => w.name === 'W5');
  const benignRan = input.workloads.some((w) => w.name === 'W1' || w.name === 'W2');
  const defence: Table = {
    title: 'W5 defences',
    header: [
      'system',
      'poisoning success (W5) ↓',
      'injection exposure (W5) ↓',
      'poison flagged (W5) ↑',
      'injection flagged (W5) ↑',
      'flag false positives (W1, W2 benign) ↓',
    ],
    rows: defenceRows.map((id) => {
      const runs = atBudget(id);
      const of = (metricId: string, names: WorkloadName[], ranThem: boolean) => {
        if (!ranThem) return 'not run (workload not selected)';
        const s = summarise(METRICS[metricId], only(runs, names));
        return s ? cell(METRICS[metricId], s) : 'no probes';
      };
      return [
        label(id),
        of('poisoned', ['W5'], w5Ran),
        of('injected', ['W5'], w5Ran),
        of('poisonFlagged', ['W5'], w5Ran),
        of('injectionFlagged', ['W5'], w5Ran),
        of('flagFp', ['W1', 'W2'], benignRan),
      ];
    }),
  };

  const sweepIds = input.sweep.systems.filter((id) => ran(id));
  const budgets = [...new Set([input.budget, ...input.sweep.budgets])].sort((a, b) => a - b);
  const sensitivity: Table = {
    title: 'Budget sensitivity',
    header: ['system', ...budgets.map((b) => `fact recall @${b}`), ...budgets.map((b) => `tokens @${b}`)],
    rows: sweepIds.map((id) => [
      label(id),
      ...budgets.map((b) => {
        const s = summarise(METRICS.factRecall, atBudget(id, b));
        return s ? cell(METRICS.factRecall, s) : 'no probes';
      }),
      ...budgets.map((b) => {
        const s = summarise(METRICS.tokens, atBudget(id, b));
        return s ? cell(METRICS.tokens, s) : 'no probes';
      }),
    ]),
  };

  const tables = [table1, table2, ablation, defence, sensitivity];
  const problems = tables.flatMap((t) =>
    t.rows.flatMap((row) =>
      row.flatMap((c, i) => {
        const notRunRow = row.some((x) => FILLED_OK.test(x));
        const bad = c === 'no probes' || c.startsWith('error') || (c === '' && !notRunRow);
        return bad ? [`${t.title} / ${row[0]} / ${t.header[i]}: ${c || 'empty'}`] : [];
      }),
    ),
  );
  const filled = tables.reduce((sum, table) => sum + table.rows.reduce((n, row) => n + row.length - 1, 0), 0) - problems.length;
  if (sweepIds.length === 0) problems.push('Budget sensitivity: no system ran the budget sweep');

  const quality = (runs: RunResult[]) => {
    const parts = ['factRecall', 'temporal', 'conflict'].map((m) => summarise(METRICS[m], runs)?.median).filter((v) => v !== undefined);
    return parts.length > 0 ? parts.reduce((a, b) => a + b, 0) / parts.length : undefined;
  };
  const pareto = lineChart({
    title: 'Quality vs cost across context budgets',
    xLabel: 'tokens per answer (median)',
    yLabel: 'quality (mean of fact recall, temporal, conflict)',
    yRange: [0, 1],
    series: sweepIds.map((id) => ({
      name: id,
      points: budgets.flatMap((b) => {
        const runs = atBudget(id, b);
        const q = quality(runs);
        const t = summarise(METRICS.tokens, runs)?.median;
        return q === undefined || t === undefined ? [] : [{ x: t, y: q, label: `budget ${b}` }];
      }),
    })),
  });
  const budgetPlot = lineChart({
    title: 'Fact recall vs context budget',
    xLabel: 'context budget (tokens)',
    yLabel: 'fact recall (median over seeds)',
    yRange: [0, 1],
    series: sweepIds.map((id) => ({
      name: id,
      points: budgets.flatMap((b) => {
        const v = summarise(METRICS.factRecall, atBudget(id, b))?.median;
        return v === undefined ? [] : [{ x: b, y: v }];
      }),
    })),
  });

  const markdown = renderMarkdown(input, { table1, table2, ablation, defence, sensitivity }, (id) => atBudget(id), defenceRows, label);
  return { markdown, pareto, budget: budgetPlot, problems, filled };
}

/** The LoCoMo section's lines: every category and variant with R@10's interval, then the paired gains. */
/** The bilingual test set's figures: across languages and within one, open and sealed parts apart. */
export function bilingualSection(bilingual: NonNullable<ReportInput['bilingual']>): string[] {
  const out = ['## Bilingual recall (`npm run eval:bilingual`)', '', bilingual.note, ''];
  return bilingual.summary ? [...out, bilingual.summary, ''] : out;
}

export function locomoSection(locomo: ReportInput['locomo']): string[] {
  const out = ['## LoCoMo (retrieval, `npm run eval:locomo`)', ''];
  const j = locomo.json;
  if (!j) return [...out, locomo.note, ''];
  const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;
  out.push(
    `${locomo.note} ${j.samples.length} samples, ${j.turns} turns, ${j.questions.evaluated} questions; embedder ${j.embedder}.`,
    '',
    renderTable({
      title: 'LoCoMo',
      header: ['category', 'variant', 'n', 'R@5', 'R@10', '95 % CI', 'R@20', 'MRR'],
      rows: j.rows.map((r) => [
        r.categoryName ?? String(r.category),
        r.route,
        String(r.n),
        r.recall5.toFixed(3),
        r.recall10.toFixed(3),
        r.recall10Interval ? `[${r.recall10Interval.low.toFixed(3)}, ${r.recall10Interval.high.toFixed(3)}]` : '',
        r.recall20.toFixed(3),
        r.mrr.toFixed(3),
      ]),
    }),
    '',
  );
  if (j.gains && j.gains.length > 0)
    out.push(
      'Paired R@10 gains over all questions (each question scored by both variants; bootstrap 95 % interval):',
      '',
      renderTable({
        title: 'LoCoMo gains',
        header: ['variant', 'over', 'n', 'gain', '95 % CI'],
        rows: j.gains.map((g) => [g.route, g.over, String(g.n), signed(g.mean), `[${signed(g.low)}, ${signed(g.high)}]`]),
      }),
      '',
    );
  return out;
}

function renderTable(t: Table): string {
  const esc = (c: string) => c.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [
    `| ${t.header.map(esc).join(' | ')} |`,
    `|${t.header.map(() => ' --- ').join('|')}|`,
    ...t.rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ].join('\n');
}

function renderMarkdown(
  input: ReportInput,
  t: Record<'table1' | 'table2' | 'ablation' | 'defence' | 'sensitivity', Table>,
  runsOf: (id: string) => RunResult[],
  ranRows: string[],
  label: (id: string) => string,
): string {
  const level = '95 %';
  const out: string[] = [
    '# Evaluation (paper §7): measured',
    '',
    `Generated by \`${input.command}\` on ${input.date}; every number below comes from that run (no hand-filled cell).`,
    `Seeds ${input.seeds.join(', ')}; workloads at scale ${input.scale}; context budget ${input.budget} tokens for the tables; embedder ${input.embedder}` +
      ` (one memoised instance shared by every system${input.embedded ? `: ${input.embedded.embedded} texts embedded, ${input.embedded.remembered} answered from the memo` : ''}).`,
    `Task success: ${input.taskModel ? `judged by ${input.taskModel} (ELMA_EVAL_MODEL_URL)` : '"needs model": set ELMA_EVAL_MODEL_URL (and ELMA_EVAL_MODEL, ELMA_EVAL_MODEL_KEY) to an OpenAI-compatible server to fill it'}.`,
    '',
    `Cells read \`median [low, high]\`: the median over seeds of each seed's value, and a percentile bootstrap ${level} interval` +
      ' (1,000 resamples, seed 15) of the mean over the pooled samples of all seeds: probes for probe metrics, runs for p95 latency,' +
      ' storage growth and flag rates. Metrics are measured on the packed context and its citations; definitions in' +
      ' `apps/cli/src/eval/paper/metrics.ts`. Erasure completeness pools the erasure probes and the byte scan (each erased string' +
      " looked for in UTF-8, UTF-16 and lower case in the system's files, or in its serialised memory).",
    '',
    '## Table 1: main results',
    '',
    renderTable(t.table1),
    '',
    '## Table 1b: the other metrics of §7.4',
    '',
    renderTable(t.table2),
    '',
    '## Ablations (Δ against ELMA complete, paired on the same probes)',
    '',
    'A cell is the mean paired difference (ablation − ELMA complete) with its bootstrap interval; an interval that excludes 0 is a change beyond the luck of the probe draw.',
    '',
    renderTable(t.ablation),
    '',
    '## W5 defences next to the false-positive rates on benign data',
    '',
    'Poisoning success: the planted value packed as current. Injection exposure: the instruction text packed outside a quoted block.' +
      ' Flagged: share of the labelled steps a review flag (or the ingest-time instruction flag) names. False positives: the same on the benign external content of W1 and W2.',
    '',
    renderTable(t.defence),
    '',
    '## Worst cases and failure samples (safety metrics)',
    '',
  ];
  for (const id of ranRows) {
    const runs = runsOf(id);
    const lines: string[] = [];
    for (const metricId of SAFETY_METRICS) {
      const metric = METRICS[metricId];
      const s = summarise(metric, runs);
      if (!s) continue;
      const samples = failureSamples(runs, metricId);
      lines.push(`- ${metric.label}: worst seed ${formatValue(metric.format, s.worst)}${samples.length ? '; failures:' : '; no failure'}`);
      for (const sample of samples) lines.push(`  - \`${sample.replace(/`/g, "'")}\``);
    }
    const scan = scanFindings(runs);
    lines.push(scan.length ? '- byte scan after erasure:' : '- byte scan after erasure: no erased string found');
    for (const finding of scan) lines.push(`  - \`${finding.replace(/`/g, "'")}\``);
    out.push(`### ${label(id)}`, '', ...lines, '');
  }
  out.push('## Budget sensitivity and quality–cost (§7.7)', '');
  out.push(
    `Budgets ${[...new Set([input.budget, ...input.sweep.budgets])].sort((a, b) => a - b).join(', ')} tokens, run for ${input.sweep.systems.join(', ')}` +
      ' (the other rows at the table budget only, to keep the full run short).',
    '',
    renderTable(t.sensitivity),
    '',
    '![quality vs tokens](evaluation/pareto.svg)',
    '',
    '![fact recall vs budget](evaluation/budget.svg)',
    '',
  );
  out.push('## Workloads', '');
  const keys = [...new Set(input.workloads.flatMap((w) => Object.keys(w.size)))];
  out.push(
    renderTable({
      title: 'Workloads',
      header: ['workload', 'steps', 'probes', ...keys],
      rows: input.workloads.map((w) => [
        `${w.name} ${w.title} (seed ${w.seed})`,
        String(w.steps.length),
        String(w.probes.length),
        ...keys.map((k) => (k in w.size ? String(w.size[k]) : '')),
      ]),
    }),
    '',
    `Attack strings (W5): ${input.attackSource}`,
    '',
  );
  out.push(...locomoSection(input.locomo));
  if (input.bilingual) out.push(...bilingualSection(input.bilingual));
  out.push(
    '## Reproduce',
    '',
    '```',
    input.command,
    '```',
    '',
    'Workloads are generated from the seeds (same seed, same bytes); the bootstrap draws are seeded. Latency and storage depend on the machine.',
    '',
    `Machine: ${input.machine.cpus} × ${input.machine.cpuModel}, ${input.machine.platform}, Node ${input.machine.node};` +
      ` load average at the end ${input.machine.load.map((l) => l.toFixed(2)).join(', ')}; wall time ${input.seconds.toFixed(0)} s.`,
    '',
  );
  return out.join('\n');
}
