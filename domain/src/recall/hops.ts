import { entitiesNamedIn, entityKey } from '../memory/kinds';
import type { EntityRef, MemoryRecord } from '../memory/record';

/** How far relevance falls with each edge followed: a hop-1 edge counts half a direct hit, a hop-2 edge a quarter. */
export const HOP_DECAY = 0.5;

/** Most entities whose edges are looked up at each hop, so that a hub cannot fan one query out without bound. */
export const MAX_ENTITIES_PER_HOP = 16;

export interface ReachedEdge<T> {
  item: T;
  /** How many edges away from the entities the seeds name (1 or 2). */
  hop: number;
  /** The entity it was reached at: an end of the edge that the previous hop (or a seed) named. */
  entity: EntityRef;
}

/**
 * Follows relations out from the entities the seed records name (both ends
 * of a seed edge, an entity-keyed fact), in either direction, up to `hops`
 * edges away (who approves project X: the edges at project X, then the edges
 * at whoever they lead to). `edgesOf` looks up candidate edges for some
 * entities (through the index, under the caller's policy); only those that
 * really touch the current frontier are kept, so a loose lookup cannot add
 * an unrelated edge. Each edge is reached once, at its smallest hop; seeds
 * are never reached again. Breadth-first and in lookup order, so the result
 * is deterministic for a deterministic `edgesOf`.
 */
export async function followEdges<T extends { record: MemoryRecord }>(
  seeds: readonly MemoryRecord[],
  hops: number,
  edgesOf: (entities: EntityRef[]) => Promise<T[]>,
  maxEntitiesPerHop = MAX_ENTITIES_PER_HOP,
): Promise<ReachedEdge<T>[]> {
  const seen = new Set(seeds.map((r) => r.id));
  const visited = new Set<string>();
  const enter = (refs: EntityRef[]): EntityRef[] =>
    refs.filter((ref) => {
      const key = entityKey(ref);
      if (visited.has(key)) return false;
      visited.add(key);
      return true;
    });
  let frontier = enter(seeds.flatMap(entitiesNamedIn));
  const reached: ReachedEdge<T>[] = [];
  for (let hop = 1; hop <= hops && frontier.length > 0; hop++) {
    const asked = frontier.slice(0, maxEntitiesPerHop);
    const keys = new Set(asked.map(entityKey));
    const next: EntityRef[] = [];
    for (const item of await edgesOf(asked)) {
      const relation = item.record.kind === 'relational' ? item.record.content.relation : undefined;
      if (!relation || seen.has(item.record.id)) continue;
      const entity = [relation.from, relation.to].find((ref) => keys.has(entityKey(ref)));
      if (!entity) continue;
      seen.add(item.record.id);
      reached.push({ item, hop, entity });
      next.push(...enter([relation.from, relation.to]));
    }
    frontier = next;
  }
  return reached;
}
