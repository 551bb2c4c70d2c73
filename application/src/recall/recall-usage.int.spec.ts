import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, type Elma } from '@elma/runtime';

/**
 * Recall counts `usage.retrieved` after its response, so the answer does not wait on a statistic. A remote
 * index (Elasticsearch: a search, a real-time get and a bulk write) can still be busy with that count when
 * the caller's feedback arrives; the feedback must not overtake it, or a read after the feedback misses the
 * retrieval. The index here is the real embedded one, made slow for that one write.
 */
describe('usage counts of a recall and its feedback', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-usage-'));
  const agent: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'confidential' };
  let elma: Elma;

  beforeAll(async () => {
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
    await elma.runner.start();
    const index = elma.index;
    const recordUsage = index.recordUsage.bind(index);
    index.recordUsage = async (tenant, ids, use, at) => {
      if (use === 'retrieved') await new Promise((resolve) => setTimeout(resolve, 300));
      return recordUsage(tenant, ids, use, at);
    };
  }, 60_000);
  afterAll(async () => {
    await elma?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('shows the retrieval and the adoption once the feedback has returned, however slow the index', async () => {
    const written = await elma.ingest.ingest(agent, {
      events: [
        {
          subject: 'cust-1',
          occurredAt: '2026-11-20T10:00:00Z',
          activity: 'chat.turn',
          content: { text: 'Rotterdam depot closes at 17:00 on Fridays. 鹿特丹仓库周五17点关门。' },
          source: { system: 'crm', channel: 'chat' },
          purposes: ['support'],
        },
      ],
    });
    await elma.runner.waitFor(BigInt(written.position));
    const recall = await elma.recall.recall(agent, { query: 'Rotterdam depot Fridays', purpose: 'support', budgetTokens: 200 });
    const used = recall.items[0].id;
    expect(await elma.recall.feedback(agent, recall.recallId, { adopted: [used] })).toEqual({ adopted: 1 });
    expect((await elma.index.get('acme', used))?.record.usage).toMatchObject({ retrieved: 1, adopted: 1 });
  });

  it('counts the usage writes still pending after the answer, and settles them when asked', async () => {
    const recall = await elma.recall.recall(agent, { query: 'Rotterdam depot Fridays', purpose: 'support', budgetTokens: 200 });
    const used = recall.items[0].id;
    // The answer is out; its usage count is not written yet (the index takes 300 ms for it here).
    expect(elma.recall.deferredPending).toBe(1);
    await elma.recall.settled();
    expect(elma.recall.deferredPending).toBe(0);
    expect((await elma.index.get('acme', used))?.record.usage).toMatchObject({ retrieved: 2, adopted: 1 });
  });
});
