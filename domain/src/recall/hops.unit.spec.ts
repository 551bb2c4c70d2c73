import { describe, expect, it } from 'vitest';
import { entityKey } from '../memory/kinds';
import type { EntityRef, EntityType, MemoryRecord } from '../memory/record';
import { makeRecord } from '../testing';
import { followEdges } from './hops';

const ref = (key: string): EntityRef => {
  const [type, id] = key.split(':');
  return { type: type as EntityType, id };
};

const edge = (id: string, from: string, relation: string, to: string): MemoryRecord =>
  makeRecord({
    id,
    kind: 'relational',
    content: { text: `${from} ${relation} ${to}`, relation: { from: ref(from), relation, to: ref(to) } },
  });

const approves = edge('e-approves', 'person:li-wei', 'approves', 'project:apollo');
const owns = edge('e-owns', 'team:finance', 'owns', 'project:apollo');
const leads = edge('e-leads', 'person:zhang-min', 'leads', 'team:finance');
const reportsTo = edge('e-reports', 'person:zhang-min', 'reports_to', 'person:chen-jie');
const unrelated = edge('e-other', 'person:ana', 'leads', 'team:legal');
const graph = [approves, owns, leads, reportsTo, unrelated];

/** The index, as recall uses it: edges at any of the entities, plus noise an inexact lookup might add. */
function lookup(noise: MemoryRecord[] = []) {
  const asked: string[][] = [];
  const edgesOf = async (entities: EntityRef[]) => {
    const keys = new Set(entities.map(entityKey));
    asked.push([...keys]);
    const touching = graph.filter((e) => keys.has(entityKey(e.content.relation!.from)) || keys.has(entityKey(e.content.relation!.to)));
    return [...touching, ...noise].map((record) => ({ record }));
  };
  return { edgesOf, asked };
}

const reached = async (seeds: MemoryRecord[], hops: number, noise: MemoryRecord[] = []) =>
  (await followEdges(seeds, hops, lookup(noise).edgesOf)).map(({ item, hop }) => [item.record.id, hop]);

describe('following relations from what the query found', () => {
  it('reaches the edges at the entities a hit names, one hop out', async () => {
    expect(await reached([approves], 1)).toEqual([['e-owns', 1]]);
  });

  it('reaches the edges at the entities found at hop 1, two hops out, each edge once', async () => {
    expect(await reached([approves], 2)).toEqual([
      ['e-owns', 1],
      ['e-leads', 2],
    ]);
  });

  it('says at which entity each edge was reached: the end the previous hop named', async () => {
    const found = await followEdges([approves], 2, lookup().edgesOf);
    expect(found.map(({ item, hop, entity }) => [item.record.id, hop, entityKey(entity)])).toEqual([
      ['e-owns', 1, 'project:apollo'],
      ['e-leads', 2, 'team:finance'],
    ]);
  });

  it('follows nothing for zero hops, or from hits that name no entity', async () => {
    expect(await reached([approves], 0)).toEqual([]);
    expect(await reached([makeRecord({ id: 'note' })], 2)).toEqual([]);
  });

  it('starts from a fact about an entity key too', async () => {
    const fact = makeRecord({ id: 'f', content: { text: 'x', fact: { entity: 'team:finance', attribute: 'budget', value: '2M' } } });
    expect(await reached([fact], 1)).toEqual([
      ['e-owns', 1],
      ['e-leads', 1],
    ]);
  });

  it('drops what the lookup returns that touches none of the entities asked about', async () => {
    expect(await reached([approves], 1, [unrelated, makeRecord({ id: 'not-an-edge' })])).toEqual([['e-owns', 1]]);
  });

  it('asks about each entity once', async () => {
    const { edgesOf, asked } = lookup();
    await followEdges([approves], 2, edgesOf);
    expect(asked).toEqual([['person:li-wei', 'project:apollo'], ['team:finance']]);
  });

  it('asks about at most the cap of entities per hop', async () => {
    const { edgesOf, asked } = lookup();
    expect((await followEdges([approves], 2, edgesOf, 1)).map(({ item }) => item.record.id)).toEqual([]);
    expect(asked).toEqual([['person:li-wei']]);
  });
});
