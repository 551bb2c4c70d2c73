import type { Embedder } from '@elma/domain';
import { evalEmbedder } from './embedder';
import { BASELINE_SYSTEMS } from './systems/baselines';
import { elmaSystems } from './systems/elma';
import { mem0System, prepareMem0 } from './systems/mem0';
import type { SystemSpec, WorkloadGenerator, WorkloadName } from './types';
import { loadAttackStrings } from './workloads/attack-strings';
import { workloads } from './workloads';

/** The rows of the tables, every one made with the process's one memoised embedder (`evalEmbedder`). */
export function evalSystems(): SystemSpec[] {
  const shared = (): Promise<Embedder> => evalEmbedder().then((e) => e.embedder);
  return [...BASELINE_SYSTEMS, ...elmaSystems(shared), mem0System(shared)];
}

/** The workload generators of a run, and one sentence on where W5's attack strings come from. */
export interface PreparedWorkloads {
  workloads: Record<WorkloadName, WorkloadGenerator>;
  attackSource: string;
}

/**
 * What a run needs installed before it starts (after its options were checked): Mem0 for row B5 (when it
 * cannot be installed, the row says why: "not run") and the package of public attack strings for W5 (without
 * it, W5 runs its synthetic scripts only, and the report says so).
 */
export async function prepareRun(): Promise<PreparedWorkloads> {
  await prepareMem0();
  const attacks = await loadAttackStrings();
  const { source } = attacks;
  const named = `${source.package} ${source.version} (${source.licence}, \`${source.file}\`: ${source.description})`;
  return {
    workloads: workloads(attacks),
    attackSource:
      attacks.strings.length > 0
        ? `${attacks.strings.length} public attack strings from ${named}, with W5's synthetic scripts.`
        : `W5's synthetic scripts only: the public attack strings of ${named} are unavailable here (${attacks.unavailable ?? 'empty'}).`,
  };
}
