import { EXTRACTION_RULE } from '../memory/derive';
import type { MemoryKind } from '../memory/record';

/** What closure computation needs of a record: identity and lineage, no content. */
export interface LineageNode {
  id: string;
  kind: MemoryKind;
  rule: string;
  sourceEventIds: readonly string[];
  parentIds: readonly string[];
}

export interface DeletionClosure {
  /** Records to erase, in discovery order (seeds first). */
  recordIds: string[];
  /**
   * Ingested events to erase: the sources of records extracted from them
   * (an extracted record is a copy of its event's content, so erasing the
   * record without its event would leave an input that re-derives it).
   */
  eventIds: string[];
  /** Seed ids the graph does not know (already erased, or never existed). */
  unknownSeeds: string[];
}

/**
 * The deletion closure D*(m) (paper, section 5.4 'Forgetting and deletion'): the smallest set holding the seeds
 * and every record whose lineage inputs meet the set, to any depth. Lineage
 * inputs are a record's parent records and its source events; an event is
 * erased with the records extracted from it, so everything derived from that
 * event joins the closure too. Breadth-first with a visited set: cycles (which
 * valid lineage never has, but stored data might) end the walk, not hang it.
 */
export function deletionClosure(seeds: Iterable<string>, nodes: Iterable<LineageNode>): DeletionClosure {
  const byId = new Map<string, LineageNode>();
  const childrenOf = new Map<string, string[]>();
  const fromEvent = new Map<string, string[]>();
  const link = (map: Map<string, string[]>, key: string, id: string) => {
    const list = map.get(key);
    if (list) list.push(id);
    else map.set(key, [id]);
  };
  for (const node of nodes) {
    byId.set(node.id, node);
    for (const parent of node.parentIds) link(childrenOf, parent, node.id);
    for (const event of node.sourceEventIds) link(fromEvent, event, node.id);
  }

  const records = new Set<string>();
  const events = new Set<string>();
  const unknownSeeds: string[] = [];
  const queue: string[] = [];
  for (const seed of seeds) {
    if (byId.has(seed)) queue.push(seed);
    else if (!unknownSeeds.includes(seed)) unknownSeeds.push(seed);
  }
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i];
    if (records.has(id)) continue;
    records.add(id);
    const node = byId.get(id)!;
    for (const child of childrenOf.get(id) ?? []) if (!records.has(child)) queue.push(child);
    if (node.rule !== EXTRACTION_RULE) continue;
    for (const event of node.sourceEventIds) {
      if (events.has(event)) continue;
      events.add(event);
      for (const derived of fromEvent.get(event) ?? []) if (!records.has(derived)) queue.push(derived);
    }
  }
  return { recordIds: [...records], eventIds: [...events], unknownSeeds };
}
