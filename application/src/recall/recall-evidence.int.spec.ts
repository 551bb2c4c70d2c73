import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, type Elma } from '@elma/runtime';
import { Retrieval } from './retrieval';
import { chatTurn } from '../testing/chat-turn';

/**
 * The evidence steps through the whole recall path on a real SQLite index: expansion looks up the
 * memories nearest to the best hits in other conversations, under the caller's own filter.
 */
describe('recall of evidence in other conversations', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-evidence-'));
  const agent: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'confidential' };
  const restricted: Principal = { ...agent, sub: 'agent-2', clearance: 'internal' };
  const expansion = { expansion: { seeds: 3, perSeed: 8, weight: 0.5 } };
  let elma: Elma;
  let ids: string[];

  const turn = (text: string, day: number, session: string, sensitivity?: 'internal' | 'confidential') =>
    chatTurn(text, `2026-11-${String(day).padStart(2, '0')}T10:00:00Z`, session, sensitivity);

  beforeAll(async () => {
    elma = await openElma(loadConfig({ ELMA_DATA_DIR: dataDir, ELMA_EMBEDDER: 'hashing' }), { logger: silentLogger });
    await elma.runner.start();
    const written = await elma.ingest.ingest(agent, {
      events: [
        turn('Which carrier takes the Rotterdam pallets to the Tilburg warehouse dock?', 2, 'chat-1'),
        // Weeks later, in another conversation, shares no word with the query, only with the hit above.
        turn('Tilburg warehouse dock: pallets picked up every Tuesday morning', 20, 'chat-2'),
        turn('Tilburg warehouse dock pallets now also Thursday, 周四也收货', 21, 'chat-3', 'confidential'),
      ],
    });
    ids = written.events.map((e) => `mem_ep_${e.id}`);
    await elma.runner.waitFor(BigInt(written.position));
    await elma.embeddings.waitForEmbedded('acme', 60_000);
  }, 60_000);
  afterAll(async () => {
    await elma?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const recalled = async (who: Principal, steps: object) =>
    (await elma.recall.withRanking({ steps }).recall(who, { query: 'Rotterdam carrier', purpose: 'support', budgetTokens: 500 })).items.map(
      (item) => item.id,
    );

  it("brings in a memory of another conversation that shares the best hit's words, not the query's", async () => {
    expect(await recalled(agent, {})).toEqual([ids[0]]);
    const expanded = await recalled(agent, expansion);
    expect(expanded).toContain(ids[1]);
    expect(expanded).toContain(ids[2]);
  });

  it('never brings in an expansion neighbour the caller may not see', async () => {
    const expanded = await recalled(restricted, expansion);
    expect(expanded).toContain(ids[1]);
    expect(expanded).not.toContain(ids[2]);
  });

  it('lifts by conversation by default, inside the index, each lifted hit saying by how much', async () => {
    const filter = { statuses: ['active' as const], maxSensitivity: 'internal' as const, now: new Date().toISOString() };
    const search = (steps?: object) =>
      new Retrieval(elma.index).search({
        tenant: 'acme',
        text: 'Tilburg warehouse pallets',
        limit: 10,
        filter,
        ...(steps ? { steps } : {}),
      });
    const lifted = await search();
    expect(lifted.map((hit) => hit.record.id).sort()).toEqual([ids[0], ids[1]].sort());
    for (const hit of lifted) expect(hit.via).toEqual({ route: 'conversation', lift: expect.any(Number) });
    expect(lifted.every((hit) => hit.via?.route === 'conversation' && hit.via.lift > 0)).toBe(true);
    expect((await search({})).every((hit) => hit.via === undefined)).toBe(true);
  });

  it("looks expansion neighbours up under the query's filter, before recall checks them again", async () => {
    const filter = { statuses: ['active' as const], maxSensitivity: 'internal' as const, now: new Date().toISOString() };
    const hits = await new Retrieval(elma.index).search({ tenant: 'acme', text: 'Rotterdam carrier', limit: 10, filter, steps: expansion });
    expect(hits.map((hit) => [hit.record.id, hit.via?.route])).toEqual([
      [ids[0], undefined],
      [ids[1], 'expansion'],
    ]);
    expect(hits[1].via).toMatchObject({ fromId: ids[0] });
  });
});
