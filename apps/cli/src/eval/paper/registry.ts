import type { Embedder } from '@elma/domain';
import { evalEmbedder } from './embedder';
import { BASELINE_SYSTEMS } from './systems/baselines';
import type { SystemSpec, WorkloadGenerator, WorkloadName } from './types';

/**
 * Where the evaluation finds its workloads and systems. The workload
 * generators (`workloads/index.ts`: `WORKLOADS`, and `ATTACK_SOURCE` when it
 * names the attack strings' package), the ELMA rows (`systems/elma.ts`:
 * `ELMA_SYSTEMS`) and Mem0 (`systems/mem0.ts`: `MEM0_SYSTEM`) are built
 * apart from the harness; a module missing from this build leaves its rows
 * "not run (… not in this build)" rather than breaking the others.
 * Where a module offers a factory that takes the embedder (`elmaSystems`,
 * `mem0System`), its rows are made with the process's one memoised
 * embedder (`evalEmbedder`), so every system embeds each text once.
 */

/** Imports a sibling module, or undefined when it does not exist (any other failure is thrown). */
async function optional<T>(path: string): Promise<T | undefined> {
  try {
    return (await import(/* @vite-ignore */ new URL(path, import.meta.url).href)) as T;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || /Cannot find module|Failed to load url|Does the file exist/.test(String(error)))
      return undefined;
    throw error;
  }
}

export interface Registry {
  systems: SystemSpec[];
  workloads: Partial<Record<WorkloadName, WorkloadGenerator>>;
  attackSource?: string;
  /** Rows or workloads whose module is not in this build: id → why. */
  absent: Record<string, string>;
}

const ELMA_ROWS = ['ELMA', 'B8', 'A1', 'A2', 'A3', 'A4', 'A5', 'A6', 'A7', 'A8'];

export async function loadRegistry(): Promise<Registry> {
  const absent: Record<string, string> = {};
  const systems: SystemSpec[] = [...BASELINE_SYSTEMS];
  const shared = (): Promise<Embedder> => evalEmbedder().then((e) => e.embedder);
  const elma = await optional<{ ELMA_SYSTEMS: SystemSpec[]; elmaSystems?: (embedder: () => Promise<Embedder>) => SystemSpec[] }>(
    './systems/elma.ts',
  );
  if (elma) systems.push(...(elma.elmaSystems ? elma.elmaSystems(shared) : elma.ELMA_SYSTEMS));
  else for (const id of ELMA_ROWS) absent[id] = 'systems/elma.ts not in this build';
  const mem0 = await optional<{ MEM0_SYSTEM: SystemSpec; mem0System?: (embedder: () => Promise<Embedder>) => SystemSpec }>(
    './systems/mem0.ts',
  );
  if (mem0) systems.push(mem0.mem0System ? mem0.mem0System(shared) : mem0.MEM0_SYSTEM);
  else absent.B5 = 'systems/mem0.ts not in this build';
  const workloads = await optional<{ WORKLOADS: Partial<Record<WorkloadName, WorkloadGenerator>>; ATTACK_SOURCE?: string }>(
    './workloads/index.ts',
  );
  return { systems, workloads: workloads?.WORKLOADS ?? {}, attackSource: workloads?.ATTACK_SOURCE, absent };
}
