import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, type Elma } from '@elma/runtime';

/**
 * Legal holds reach consolidation views through lineage, on the real
 * embedded index: a hold placed after the views were made withholds them at
 * once, a release shows them again, and both survive a reopen, including of
 * an index file written before lineage keys were kept (migrated on open).
 */
describe('holds along lineage on a real index', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-lineage-'));
  const writer: Principal = { tenant: 'acme', sub: 'writer-1', roles: ['agent'], purposes: ['support'], clearance: 'restricted' };
  const agent: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'confidential' };
  const legal: Principal = { tenant: 'acme', sub: 'legal-1', roles: ['legal'], purposes: ['support'], clearance: 'restricted' };
  let elma: Elma;
  let held: string;
  let views: string[];

  const open = async () => {
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
    await elma.runner.start();
  };
  const recalled = async (who: Principal) =>
    (await elma.recall.recall(who, { query: 'Harwick depot pallets flooded', purpose: 'support', budgetTokens: 4000 })).items.map(
      (i) => i.id,
    );

  beforeAll(async () => {
    await open();
    const texts = [
      'The Harwick depot flooded and the pallets were lost.',
      'I will send the signed contract by Monday.',
      'The Harwick depot ships pallets on Tuesdays.',
      'Please call me back about the invoice for the pallets.',
    ];
    const events = texts.map((text, i) => ({
      subject: 'cust-1',
      occurredAt: `2026-11-20T10:0${i}:00Z`,
      activity: 'chat.turn',
      content: { text },
      source: { system: 'crm', channel: 'chat' },
      purposes: ['support'],
    }));
    const result = await elma.ingest.ingest(writer, { events });
    await elma.runner.waitFor(BigInt(result.position));
    held = `mem_ep_${result.events[0].id}`;
    await elma.consolidation.consolidate('acme', held);
    await elma.runner.waitFor(await elma.log.headPosition());
    views = [];
    for await (const entry of elma.index.lineage('acme'))
      if (entry.rule.startsWith('consolidate.') && entry.parentIds.includes(held)) views.push(entry.id);
  }, 60_000);
  afterAll(async () => {
    await elma?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('withholds every view of a held record from recall and GET as soon as the hold is placed, and shows them after release', async () => {
    expect(views.length).toBeGreaterThan(0);
    expect(await recalled(agent)).toEqual(expect.arrayContaining(views.filter((id) => id.startsWith('mem_cs_')).slice(0, 1)));

    const hold = await elma.holds.place('acme', 'legal-1', { scope: { recordIds: [held] }, reason: 'matter 1' });
    const seen = await recalled(agent);
    for (const id of [held, ...views]) {
      expect(seen).not.toContain(id);
      await expect(elma.memories.get(agent, id)).rejects.toMatchObject({ code: 'MEMORY.NOT_FOUND' });
    }
    expect(await recalled(legal)).toEqual(expect.arrayContaining([held]));

    await elma.holds.release('acme', 'legal-1', hold.id);
    expect((await elma.memories.get(agent, views[0])).id).toBe(views[0]);
  });

  it('keeps the coverage across a reopen of an index file written before lineage keys were kept', async () => {
    await elma.close();
    const db = new Database(join(dataDir, 'index', 'tenant-acme.db'));
    db.exec('ALTER TABLE memories DROP COLUMN lineage_set');
    db.close();
    await open();

    await elma.holds.place('acme', 'legal-1', { scope: { recordIds: [held] }, reason: 'matter 2' });
    const seen = await recalled(agent);
    for (const id of views) expect(seen).not.toContain(id);
    for (const id of views) await expect(elma.memories.get(agent, id)).rejects.toMatchObject({ code: 'MEMORY.NOT_FOUND' });
  });
});
