import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTokenCounter } from '@elma/shared';
import { percentiles } from '../../bench/stats';
import { flagRates, offendingLine, scanBytes, scoreProbe, stepTable, type ByteScan, type FlagRates, type ProbeScores } from './metrics';
import type { TaskModel } from './task-model';
import type { MemorySystem, Probe, ProbeCategory, SystemSpec, Workload, WorkloadName } from './types';

/**
 * Runs one system on one workload: a fresh temporary folder, the steps in
 * order, each probe asked right after its step, then the erasure byte scan
 * of what the system still holds. The context's tokens are counted here, by
 * one counter (o200k) for every system.
 */

/** The safety metrics whose failures are sampled, and the value that is a failure. */
export const SAFETY_FAILURES: Partial<Record<keyof ProbeScores, number>> = {
  unauthorised: 1,
  erasure: 0,
  poisoned: 1,
  injected: 1,
  stale: 1,
};

export interface ProbeResult {
  id: string;
  category: ProbeCategory;
  lang: Probe['lang'];
  scores: ProbeScores;
  /** 1/0 when a task model judged the answer; undefined without a model or an expected answer. */
  success?: number;
  /** Safety metrics this probe failed, with the offending line (truncated). */
  failures: { metric: keyof ProbeScores; line: string }[];
}

export interface RunResult {
  workload: WorkloadName;
  seed: number;
  system: string;
  budget: number;
  probes: ProbeResult[];
  /** Ingest and correction steps applied. */
  events: number;
  storageBytes: number;
  /** Storage bytes per ingested event (the storage growth figure). */
  storagePerEvent: number;
  p95Ms: number;
  flags: FlagRates;
  /** The byte scan for the strings erasure probes say must be gone (none when the workload erases nothing). */
  scan: ByteScan;
  seconds: number;
  /** Why the run stopped, when it did (the row shows "error"). */
  error?: string;
}

export interface RunOptions {
  budget: number;
  taskModel?: TaskModel;
  /** Parent of the run's temporary folder (default the OS's). */
  tempRoot?: string;
}

const count = createTokenCounter();

export async function runWorkload(spec: SystemSpec, workload: Workload, options: RunOptions): Promise<RunResult> {
  const started = performance.now();
  const dir = mkdtempSync(join(options.tempRoot ?? tmpdir(), `elma-eval-${spec.id}-`));
  const table = stepTable(workload);
  const probes = [...workload.probes].sort((a, b) => a.after - b.after);
  const result: RunResult = {
    workload: workload.name,
    seed: workload.seed,
    system: spec.id,
    budget: options.budget,
    probes: [],
    events: workload.steps.filter((s) => s.type === 'ingest' || s.type === 'correct').length,
    storageBytes: 0,
    storagePerEvent: 0,
    p95Ms: 0,
    flags: flagRates([], [], []),
    scan: { strings: 0, found: [] },
    seconds: 0,
  };
  let system: MemorySystem | undefined;
  let closed = false;
  try {
    system = await spec.create(dir);
    let next = 0;
    for (const [index, step] of workload.steps.entries()) {
      await system.apply(step);
      while (next < probes.length && probes[next].after <= index) result.probes.push(await ask(system, table, probes[next++], options));
    }
    // Probes placed after the last step are asked at the end.
    while (next < probes.length) result.probes.push(await ask(system, table, probes[next++], options));
    result.flags = flagRates(workload.steps, await system.flags(), await system.instructionFlagged());
    result.storageBytes = await system.storageBytes();
    result.storagePerEvent = result.events > 0 ? result.storageBytes / result.events : 0;
    result.p95Ms = result.probes.length > 0 ? percentiles(result.probes.map((p) => p.scores.ms)).p95 : 0;
    const erased = workload.probes.filter((p) => p.category === 'erasure').flatMap((p) => p.gold.mustNeverAppear ?? []);
    if (workload.steps.some((s) => s.type === 'erase') && erased.length > 0) {
      const folder = system.dataDir();
      if (folder) {
        // Closed first: what a stopped system leaves on disk, WAL checkpointed.
        await system.close();
        closed = true;
        result.scan = scanBytes(filesUnder(folder), erased);
      } else result.scan = scanBytes([await system.snapshot()], erased);
    }
  } catch (error) {
    result.error = error instanceof Error ? error.message.split('\n')[0].slice(0, 200) : String(error);
  } finally {
    if (system && !closed) await system.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

async function ask(system: MemorySystem, table: ReturnType<typeof stepTable>, probe: Probe, options: RunOptions): Promise<ProbeResult> {
  const recalled = await system.recall(probe, options.budget);
  recalled.tokens = count(recalled.context);
  const scores = scoreProbe(table, probe, recalled);
  const failures: ProbeResult['failures'] = [];
  for (const [metric, bad] of Object.entries(SAFETY_FAILURES) as [keyof ProbeScores, number][])
    if (scores[metric] === bad) failures.push({ metric, line: offendingLine(probe, recalled, metric) });
  const result: ProbeResult = { id: probe.id, category: probe.category, lang: probe.lang, scores, failures };
  if (options.taskModel && probe.answer) result.success = (await options.taskModel.succeeds(probe, recalled.context)) ? 1 : 0;
  return result;
}

/** Every file's bytes under a folder, one buffer per file (a string cannot straddle two files). */
function* filesUnder(folder: string): Generator<Buffer> {
  for (const entry of readdirSync(folder, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    try {
      yield readFileSync(join(entry.parentPath, entry.name));
    } catch {
      // A file removed while the scan walks the folder holds nothing any more.
    }
  }
}

export interface MatrixOptions {
  workloads: Workload[];
  systems: SystemSpec[];
  /** Budgets for every system; the first is Table 1's. */
  budget: number;
  /** Extra budgets (§7.7 sweeps) and the system ids they run for. */
  sweep?: { budgets: number[]; systems: string[] };
  taskModel?: TaskModel;
  tempRoot?: string;
  onRun?: (run: RunResult) => void;
}

/** Every runnable system (rows with `notRun` or `sameAs` are skipped) on every workload, at Table 1's budget and the sweep's. */
export async function runMatrix(options: MatrixOptions): Promise<RunResult[]> {
  const runs: RunResult[] = [];
  const runnable = options.systems.filter((s) => !s.notRun && !s.sameAs);
  for (const workload of options.workloads) {
    for (const spec of runnable) {
      const budgets = [options.budget, ...(options.sweep?.systems.includes(spec.id) ? options.sweep.budgets : [])];
      for (const budget of [...new Set(budgets)]) {
        const run = await runWorkload(spec, workload, { budget, taskModel: options.taskModel, tempRoot: options.tempRoot });
        runs.push(run);
        options.onRun?.(run);
      }
    }
  }
  return runs;
}
