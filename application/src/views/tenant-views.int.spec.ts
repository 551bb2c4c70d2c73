import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECALLABLE_STATUSES, type Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';

const url = process.env.ELMA_ELASTICSEARCH_URL;
const who: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };

const events = (from: number, count: number) => ({
  events: Array.from({ length: count }, (_, i) => ({
    subject: `cust-${(from + i) % 3}`,
    occurredAt: new Date(Date.UTC(2026, 10, 1, 0, from + i)).toISOString(),
    activity: 'chat.turn',
    content: { text: `Shipment ${from + i} to Shanghai is delayed 发货延迟 ${from + i}` },
    source: { system: 'crm', externalId: `ext-${from + i}` },
    purposes: ['support'],
  })),
});

(url ? describe : describe.skip)(
  `rebuilding a tenant's views on Elasticsearch${url ? '' : ' (skipped: set ELMA_ELASTICSEARCH_URL to run it against a real server)'}`,
  () => {
    let elma: Elma;
    // Made in beforeAll: a skipped suite is still collected, and must leave no folder behind.
    let dir: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'elma-views-'));
      const namespace = `views${Date.now().toString(36)}`;
      elma = await openElma(
        loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir, ELMA_ELASTICSEARCH_URL: url, ELMA_ES_NAMESPACE: namespace }),
        {
          logger: silentLogger,
        },
      );
      await elma.runner.start();
      const result = await elma.ingest.ingest(who, events(0, 30));
      await elma.runner.waitFor(BigInt(result.position));
    });

    afterAll(async () => {
      for (const tenant of (await elma?.index.tenants()) ?? []) await elma.index.dropTenant(tenant);
      await elma?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const ids = async () =>
      (
        await elma.index.search({
          tenant: 'acme',
          text: 'shipment delayed 发货',
          limit: 100,
          filter: { statuses: RECALLABLE_STATUSES, maxSensitivity: 'restricted', now: new Date().toISOString() },
        })
      )
        .map((h) => h.record.id)
        .sort();

    it('builds a new index beside the live one, moves the alias in one step, and keeps what was written meanwhile', async () => {
      expect(elma.views.strategy()).toBe('alias_swap');
      const before = await ids();
      expect(before).toHaveLength(30);
      const result = await elma.views.rebuildBeside('acme', {
        // Events arriving after the fill read the log: the live projection writes them to the old index.
        afterFill: async () => {
          const written = await elma.ingest.ingest(who, events(30, 5));
          await elma.runner.waitFor(BigInt(written.position));
        },
      });

      expect(result.swap?.to).toMatch(/-acme-memories-v\d+-r\d+$/);
      expect(result.dropped).toBeGreaterThanOrEqual(30);
      const after = await ids();
      expect(after).toHaveLength(35);
      expect(after).toEqual(expect.arrayContaining(before));
      expect(await elma.index.count('acme')).toBe(35);
    });
  },
);
