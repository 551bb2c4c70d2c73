import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, type Elma } from '@elma/runtime';
import { chatTurn } from '../testing/chat-turn';

/**
 * Neighbour smoothing through the whole recall path (ingest with a session, projection, index, recall):
 * the answer to a question is often the turn after the one that matches it, sharing none of its words.
 */
describe('recall of the turns around a hit', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-neighbours-'));
  const agent: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'confidential' };
  const restricted: Principal = { ...agent, sub: 'agent-2', clearance: 'internal' };
  let elma: Elma;
  let ids: string[];

  const turn = (text: string, minute: number, session: string, sensitivity?: 'internal' | 'confidential') =>
    chatTurn(text, `2026-11-20T10:${String(minute).padStart(2, '0')}:00Z`, session, sensitivity);

  beforeAll(async () => {
    elma = await openElma(loadConfig({ ELMA_DATA_DIR: dataDir, ELMA_EMBEDDER: 'hashing' }), { logger: silentLogger });
    await elma.runner.start();
    const written = await elma.ingest.ingest(agent, {
      events: [
        turn('Which warehouse ships the Rotterdam orders?', 0, 'chat-1'),
        turn('Tilburg, since the move in March.', 1, 'chat-1'),
        turn('仓库在哪里？ Thanks, noted.', 2, 'chat-1'),
        // Another conversation of the same customer: never a neighbour of chat-1's turns.
        turn('Amsterdam handles the returns.', 1, 'chat-2'),
        // A turn only `agent` may see, right after the question of chat-3.
        turn('Which carrier takes the Rotterdam pallets?', 10, 'chat-3'),
        turn('DHL Freight under contract 4471.', 11, 'chat-3', 'confidential'),
      ],
    });
    ids = written.events.map((e) => `mem_ep_${e.id}`);
    await elma.runner.waitFor(BigInt(written.position));
  }, 60_000);
  afterAll(async () => {
    await elma?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('recalls the answer turn that follows a strong hit, with its session kept on the memory', async () => {
    const recall = await elma.recall.recall(agent, { query: 'Rotterdam warehouse', purpose: 'support', budgetTokens: 500 });
    const found = recall.items.map((item) => item.id);
    expect(found).toContain(ids[0]);
    // The answer shares no word with the query: it comes in as the question's neighbour.
    expect(found).toContain(ids[1]);
    expect(found).not.toContain(ids[3]);
    expect((await elma.index.get('acme', ids[1]))?.record.session).toBe('chat-1');
  });

  it('never brings in a neighbour the caller may not see', async () => {
    const seen = await elma.recall.recall(agent, { query: 'Rotterdam pallets carrier', purpose: 'support', budgetTokens: 500 });
    expect(seen.items.map((item) => item.id)).toContain(ids[5]);
    const hidden = await elma.recall.recall(restricted, { query: 'Rotterdam pallets carrier', purpose: 'support', budgetTokens: 500 });
    expect(hidden.items.map((item) => item.id)).toContain(ids[4]);
    expect(hidden.items.map((item) => item.id)).not.toContain(ids[5]);
  });
});
