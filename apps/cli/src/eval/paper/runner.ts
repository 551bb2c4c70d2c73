import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTokenCounter } from '@elma/shared';
import { percentiles } from '../../bench/stats';
import {
  flagRates,
  offendingLine,
  scanBytes,
  scoreProbe,
  stepTable,
  type ByteScan,
  type FlagRates,
  type ProbeScores,
  type StepTable,
} from './metrics';
import type { TaskModel } from './task-model';
import type { MemorySystem, Probe, ProbeCategory, SystemSpec, Workload, WorkloadName } from './types';

/**
 * Runs one system on one workload: a fresh temporary folder, the steps in
 * order, each probe asked right after its step, then the erasure byte scan
 * of what the system still holds; each probe is asked at every budget of
 * the run (Table 1's first), so a budget sweep costs recalls, not ingests.
 * The context's tokens are counted here, by one counter (o200k) for every
 * system.
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
  /** Storage growth per ingested event: bytes at the end less the empty system's, over the events (the §7.4 figure). */
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
  /**
   * Context budgets each probe is asked at, Table 1's first: one run (one
   * ingest) serves every budget. At each probe the system is asked at the
   * first budget, then at the others, before the next step is applied.
   */
  budgets: number[];
  taskModel?: TaskModel;
  /** Parent of the run's temporary folder (default the OS's). */
  tempRoot?: string;
}

const count = createTokenCounter();

/** One system on one workload: one result per budget (they share the storage, flags and byte scan). */
export async function runWorkload(spec: SystemSpec, workload: Workload, options: RunOptions): Promise<RunResult[]> {
  const started = performance.now();
  const dir = mkdtempSync(join(options.tempRoot ?? tmpdir(), `elma-eval-${spec.id}-`));
  const table = stepTable(workload);
  const probes = [...workload.probes].sort((a, b) => a.after - b.after);
  const budgets = [...new Set(options.budgets)];
  const asked = new Map<number, ProbeResult[]>(budgets.map((b) => [b, []]));
  const shared: Omit<RunResult, 'budget' | 'probes' | 'p95Ms'> = {
    workload: workload.name,
    seed: workload.seed,
    system: spec.id,
    events: workload.steps.filter((s) => s.type === 'ingest' || s.type === 'correct').length,
    storageBytes: 0,
    storagePerEvent: 0,
    flags: flagRates([], [], []),
    scan: { strings: 0, found: [] },
    seconds: 0,
  };
  let system: MemorySystem | undefined;
  let closed = false;
  try {
    system = await spec.create(dir);
    // What an empty system already holds (database files, indexes, keys) is not growth.
    const emptyBytes = await system.storageBytes();
    const askAll = async (probe: Probe) => {
      for (const budget of budgets) asked.get(budget)!.push(await ask(system!, table, probe, budget, options.taskModel));
    };
    let next = 0;
    for (const [index, step] of workload.steps.entries()) {
      await system.apply(step);
      while (next < probes.length && probes[next].after <= index) await askAll(probes[next++]);
    }
    // Probes placed after the last step are asked at the end.
    while (next < probes.length) await askAll(probes[next++]);
    shared.flags = flagRates(workload.steps, await system.flags(), await system.instructionFlagged());
    shared.storageBytes = await system.storageBytes();
    shared.storagePerEvent = shared.events > 0 ? Math.max(0, shared.storageBytes - emptyBytes) / shared.events : 0;
    const erased = workload.probes.filter((p) => p.category === 'erasure').flatMap((p) => p.gold.mustNeverAppear ?? []);
    if (workload.steps.some((s) => s.type === 'erase') && erased.length > 0) {
      const folder = system.dataDir();
      if (folder) {
        // Closed first: what a stopped system leaves on disk, WAL checkpointed.
        await system.close();
        closed = true;
        shared.scan = scanBytes(filesUnder(folder), erased);
      } else shared.scan = scanBytes([await system.snapshot()], erased);
    }
  } catch (error) {
    shared.error = error instanceof Error ? error.message.split('\n')[0].slice(0, 200) : String(error);
  } finally {
    if (system && !closed) await system.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  shared.seconds = (performance.now() - started) / 1000;
  return budgets.map((budget) => {
    const results = asked.get(budget)!;
    return { ...shared, budget, probes: results, p95Ms: results.length > 0 ? percentiles(results.map((p) => p.scores.ms)).p95 : 0 };
  });
}

async function ask(system: MemorySystem, table: StepTable, probe: Probe, budget: number, taskModel?: TaskModel): Promise<ProbeResult> {
  const recalled = await system.recall(probe, budget);
  recalled.tokens = count(recalled.context);
  const scores = scoreProbe(table, probe, recalled);
  const failures: ProbeResult['failures'] = [];
  for (const [metric, bad] of Object.entries(SAFETY_FAILURES) as [keyof ProbeScores, number][])
    if (scores[metric] === bad) failures.push({ metric, line: offendingLine(probe, recalled, metric) });
  const result: ProbeResult = { id: probe.id, category: probe.category, lang: probe.lang, scores, failures };
  if (taskModel && probe.answer) result.success = (await taskModel.succeeds(probe, recalled.context)) ? 1 : 0;
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
  /** Called after each system's run of a workload, with its result per budget. */
  onRun?: (runs: RunResult[]) => void;
}

/** Every runnable system (rows with `notRun` or `sameAs` are skipped) on every workload, at Table 1's budget and, for the sweep's systems, the sweep's. */
export async function runMatrix(options: MatrixOptions): Promise<RunResult[]> {
  const runs: RunResult[] = [];
  const runnable = options.systems.filter((s) => !s.notRun && !s.sameAs);
  for (const workload of options.workloads) {
    for (const spec of runnable) {
      const budgets = [options.budget, ...(options.sweep?.systems.includes(spec.id) ? options.sweep.budgets : [])];
      const results = await runWorkload(spec, workload, { budgets, taskModel: options.taskModel, tempRoot: options.tempRoot });
      runs.push(...results);
      options.onRun?.(results);
    }
  }
  return runs;
}
