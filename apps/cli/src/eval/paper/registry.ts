import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Embedder } from '@elma/domain';
import { evalEmbedder } from './embedder';
import { BASELINE_SYSTEMS } from './systems/baselines';
import type { SystemSpec, WorkloadGenerator, WorkloadName } from './types';

/**
 * Where the evaluation finds its workloads and systems. The workload
 * generators (`workloads/index.ts`: `workloads(attacks)` with
 * `loadAttackStrings()`, else `WORKLOADS`), the ELMA rows (`systems/elma.ts`:
 * `ELMA_SYSTEMS`) and Mem0 (`systems/mem0.ts`: `MEM0_SYSTEM`) are built
 * apart from the harness; a module missing from this build leaves its rows
 * "not run (… not in this build)" rather than breaking the others.
 * Where a module offers a factory that takes the embedder (`elmaSystems`,
 * `mem0System`), its rows are made with the process's one memoised
 * embedder (`evalEmbedder`), so every system embeds each text once.
 */

/** Imports a sibling module, or undefined when its file is not in this build (a failure inside it is thrown). */
async function optional<T>(path: string): Promise<T | undefined> {
  const url = new URL(path, import.meta.url);
  if (!existsSync(fileURLToPath(url))) return undefined;
  return (await import(/* @vite-ignore */ url.href)) as T;
}

/** What `workloads/index.ts` exports, as far as the registry uses it. */
interface WorkloadModule {
  WORKLOADS: Partial<Record<WorkloadName, WorkloadGenerator>>;
  /** Where W5's attack strings come from, for modules that state it as one sentence. */
  ATTACK_SOURCE?: string;
  /** The generators with W5 given the public attack strings, and how to load those. */
  workloads?: (attacks: AttackStrings) => Partial<Record<WorkloadName, WorkloadGenerator>>;
  loadAttackStrings?: () => Promise<AttackStrings>;
}

interface AttackStrings {
  source: { package: string; version: string; licence: string; file: string; description: string };
  strings: string[];
  unavailable?: string;
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
  const module = await optional<WorkloadModule>('./workloads/index.ts');
  if (!module) return { systems, workloads: {}, absent };
  if (!module.workloads || !module.loadAttackStrings)
    return { systems, workloads: module.WORKLOADS, attackSource: module.ATTACK_SOURCE, absent };
  const attacks = await module.loadAttackStrings();
  const { source } = attacks;
  const named = `${source.package} ${source.version} (${source.licence}, \`${source.file}\`: ${source.description})`;
  return {
    systems,
    workloads: module.workloads(attacks),
    attackSource:
      attacks.strings.length > 0
        ? `${attacks.strings.length} public attack strings from ${named}, with W5's synthetic scripts.`
        : `W5's synthetic scripts only: the public attack strings of ${named} are unavailable here (${attacks.unavailable ?? 'empty'}).`,
    absent,
  };
}
