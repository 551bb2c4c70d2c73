import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, type Elma } from '@elma/runtime';

/**
 * Consolidation shares its process with the API (`elma start`): however
 * large the tenant, it must hand the event loop back often, or every request
 * and workflow task waits until it is done.
 */
describe('consolidation in a process that also serves requests', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-consolidation-'));
  const principal: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };
  const SUBJECTS = 5;
  const EVENTS = 2_500;
  let elma: Elma;

  beforeAll(async () => {
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
    await elma.runner.start();
    let position = 0;
    for (let from = 0; from < EVENTS; from += 500) {
      const events = Array.from({ length: 500 }, (_, k) => ({
        subject: `cust-${(from + k) % SUBJECTS}`,
        occurredAt: new Date(Date.UTC(2026, 10, 1) + (from + k) * 60_000).toISOString(),
        activity: 'chat.turn',
        content: { text: `note ${from + k}: the depot in Harwick ships pallets on day ${(from + k) % 7}` },
        source: { system: 'crm', channel: 'chat', externalId: `c-${from + k}` },
        purposes: ['support'],
      }));
      position = Number((await elma.ingest.ingest(principal, { events })).position);
    }
    await elma.runner.waitFor(BigInt(position), 300_000);
  }, 300_000);
  afterAll(async () => {
    await elma?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lets timers and I/O run while it reads a large tenant', async () => {
    const [ref] = await elma.consolidation.subjectRefs('acme');
    let turns = 0;
    let running = true;
    const turn = () => {
      turns++;
      if (running) setImmediate(turn);
    };
    setImmediate(turn);
    const started = turns;
    const result = await elma.consolidation.consolidate('acme', ref);
    running = false;
    expect(result.summaries + result.facts + result.merges + result.unchanged).toBeGreaterThan(0);
    // The tenant has thousands of lineage entries and the subject hundreds of records: a pass without
    // yields gives the loop no turn at all until it is done.
    expect(turns - started).toBeGreaterThanOrEqual(3);
  });
});
