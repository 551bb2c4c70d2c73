import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TEXT_ANALYSIS, documentTerms, type MemoryRecord, type Principal } from '@elma/domain';
import type { Elma } from '@elma/runtime';
import { scratchElma } from '../testing/scratch-elma';

/**
 * The byte scan runs beside the index probes, with every erased record's needles; the content a surviving
 * record holds verbatim is set aside afterwards (skipped, not failed), and nothing else is.
 */
describe('erasure verification', () => {
  const scratch = scratchElma('verification');
  const tenant = 'acme';
  const agent: Principal = { tenant, sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };
  const dpo: Principal = { tenant, sub: 'dpo-1', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' };
  const SHARED = 'the Bramblecote warehouse keeps its spare keys under the loading ramp';
  const dataDir = scratch.dataDir;
  let elma: Elma;
  beforeAll(() => {
    elma = scratch.elma;
  });

  const event = (subject: string, text: string, minute: number) => ({
    subject,
    occurredAt: new Date(Date.UTC(2026, 10, 2, 9, minute)).toISOString(),
    activity: 'chat.turn',
    content: { text },
    source: { system: 'crm', channel: 'chat' },
    purposes: ['support'],
  });

  /** Runs the erasure of `subject` up to its verification, as the workflow does; `plant` runs just before it. */
  const eraseAndVerify = async (subject: string, plant?: () => Promise<void>) => {
    const { requestId } = await elma.erasure.requests.request(
      dpo,
      { scope: { type: 'subject', subject }, reason: 'subject_request' },
      'req-e',
    );
    const at = { attempt: 1, startedAt: new Date().toISOString() };
    const { perRecord } = await elma.erasure.steps.authorize(tenant, requestId, at);
    const { seeds } = await elma.erasure.steps.locate(tenant, requestId, perRecord, at);
    const closure = await elma.erasure.steps.closure(tenant, requestId, seeds, at);
    const checked = await elma.erasure.steps.legalHoldCheck(tenant, requestId, closure, at);
    const set = { recordIds: checked.recordIds, eventIds: checked.eventIds };
    await elma.erasure.steps.recordApproval(tenant, requestId, { required: false, startedAt: at.startedAt }, at);
    await elma.erasure.steps.purgeIndex(tenant, requestId, set, at);
    await elma.erasure.steps.purgeCaches(tenant, requestId, set, at);
    await elma.erasure.steps.shredKeys(tenant, requestId, set, at);
    await elma.erasure.steps.deleteStreams(tenant, requestId, set, at);
    await elma.erasure.steps.writeTombstones(tenant, requestId, set, at);
    await plant?.();
    return elma.erasure.steps.verify(tenant, requestId, set, 1, at);
  };

  it('skips the content another subject’s surviving record holds verbatim, and passes on the rest', async () => {
    await elma.ingest.ingest(agent, event('leaving-subject', SHARED, 0), 'req-1');
    await elma.ingest.ingest(agent, event('leaving-subject', 'asked for the pallet invoice of the Harwick depot', 5), 'req-2');
    await elma.ingest.ingest(agent, event('staying-subject', SHARED, 10), 'req-3');
    await elma.runner.waitFor(await elma.log.headPosition(), 30_000);

    const verification = await eraseAndVerify('leaving-subject');

    expect(verification.passed).toBe(true);
    expect(verification.byteScan).toMatchObject({ checked: 2, failed: 0, skipped: 1 });
    expect(verification.byteScan.files).toBeGreaterThan(0);
  }, 60_000);

  /** The tenant's index partition file, opened beside the service (WAL: both see each other's commits). */
  const partitionFile = () => new Database(join(dataDir, 'index', `tenant-${tenant}.db`));

  it('fails on a full-text entry a purge left behind, which no search returns (its row is gone)', async () => {
    const text = 'my Quillfeather locker code is 4471 at the Tessaly gym';
    await elma.ingest.ingest(agent, event('fts-subject', text, 20), 'req-4');
    await elma.runner.waitFor(await elma.log.headPosition(), 30_000);
    const db = partitionFile();
    // The FTS table stores no text (contentless): the document is made again from the record, as the index makes it.
    const record = JSON.parse(
      db.prepare(`SELECT record FROM memories WHERE subject = 'fts-subject'`).pluck().get() as string,
    ) as MemoryRecord;
    const body = documentTerms(record, DEFAULT_TEXT_ANALYSIS).join(' ');

    const verification = await eraseAndVerify('fts-subject', async () => {
      // As if the purge had deleted the row but not its FTS document: an orphan under a rowid no row has.
      db.prepare('INSERT INTO memories_fts (rowid, body) VALUES (?, ?)').run(1_000_000, body);
    });
    db.close();

    expect(verification.passed).toBe(false);
    expect(verification.bm25).toMatchObject({ checked: 1, failed: 1 });
    expect(verification.getById.failed).toBe(0);
  }, 60_000);

  it('fails on a row, its terms and its vector put back after the purge', async () => {
    await elma.ingest.ingest(agent, event('row-subject', 'the Orrindale cabin alarm code is 9902', 30), 'req-5');
    await elma.runner.waitFor(await elma.log.headPosition(), 30_000);
    const [hit] = await elma.index.search({
      tenant,
      text: 'Orrindale cabin alarm',
      limit: 1,
      filter: { statuses: ['active'], maxSensitivity: 'restricted', now: new Date().toISOString() },
    });
    const stored = (await elma.index.get(tenant, hit.record.id))!;

    const verification = await eraseAndVerify('row-subject', () => elma.index.upsert(tenant, [stored]));

    expect(verification.passed).toBe(false);
    expect(verification).toMatchObject({ getById: { failed: 1 }, bm25: { failed: 1 }, knn: { failed: 1 } });
  }, 60_000);

  it('fails on a vector-graph node left behind by a row that is gone, which no search returns', async () => {
    await elma.ingest.ingest(agent, event('graph-subject', 'the Wyndcross boathouse gate code is 5168', 40), 'req-6');
    await elma.runner.waitFor(await elma.log.headPosition(), 30_000);
    const [hit] = await elma.index.search({
      tenant,
      text: 'Wyndcross boathouse gate',
      limit: 1,
      filter: { statuses: ['active'], maxSensitivity: 'restricted', now: new Date().toISOString() },
    });
    const stored = (await elma.index.get(tenant, hit.record.id))!;

    const verification = await eraseAndVerify('graph-subject', async () => {
      // Back into the graph with its row, then the row and its terms deleted behind the index's back: only the node is left.
      await elma.index.upsert(tenant, [stored]);
      const db = partitionFile();
      const rowid = db.prepare('SELECT rowid FROM memories WHERE id = ?').pluck().get(stored.record.id) as number;
      db.prepare('DELETE FROM memories_fts WHERE rowid = ?').run(rowid);
      db.prepare('DELETE FROM memories WHERE rowid = ?').run(rowid);
      db.close();
    });

    expect(verification.passed).toBe(false);
    expect(verification).toMatchObject({ getById: { failed: 0 }, bm25: { failed: 0 }, knn: { checked: 1, failed: 1 } });
  }, 60_000);
});
