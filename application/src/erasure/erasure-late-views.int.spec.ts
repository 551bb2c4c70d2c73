import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, type Elma } from '@elma/runtime';

/**
 * Consolidation runs beside erasure (its own workflow, triggered by the subject's earlier writes), so a view of
 * the subject's records can be written after the erasure captured its closure: the consolidation read its inputs
 * before the purge. The view is derived from erased records, so it is part of D*(m) and must not outlive the
 * erasure; nor may it keep the subject's pseudonym alive after the subject's stream is gone.
 */
describe('a view derived while its inputs are being erased', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-late-view-'));
  const tenant = 'acme';
  const agent: Principal = { tenant, sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };
  const dpo: Principal = { tenant, sub: 'dpo-1', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' };
  const SUBJECT = 'late-view-subject';
  let elma: Elma;

  beforeAll(async () => {
    // With ELMA_E2E_ELASTICSEARCH_URL set, on that node (a namespace of its own), as the API suites run there.
    const elasticsearch = process.env.ELMA_E2E_ELASTICSEARCH_URL;
    const onNode = elasticsearch
      ? { ELMA_ELASTICSEARCH_URL: elasticsearch, ELMA_ES_NAMESPACE: `late${randomUUID().replaceAll('-', '').slice(0, 12)}` }
      : {};
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir, ...onNode }), { logger: silentLogger });
    await elma.runner.start();
  });
  afterAll(async () => {
    await elma?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const settle = async () => elma.runner.waitFor(await elma.log.headPosition(), 30_000);
  const event = (text: string, minute: number) => ({
    subject: SUBJECT,
    occurredAt: new Date(Date.UTC(2026, 10, 2, 9, minute)).toISOString(),
    activity: 'chat.turn',
    content: { text },
    source: { system: 'crm', channel: 'chat' },
    purposes: ['support'],
  });
  const ofSubject = async () => {
    const ids: string[] = [];
    for await (const entry of elma.index.lineage(tenant)) if (entry.subject === SUBJECT || entry.owner === SUBJECT) ids.push(entry.id);
    return ids;
  };

  /** The erasure's steps from the legal-hold check on, as the workflow runs them. */
  const finish = async (requestId: string, closure: { recordIds: string[]; eventIds: string[] }) => {
    const at = { attempt: 1, startedAt: new Date().toISOString() };
    const checked = await elma.erasure.steps.legalHoldCheck(tenant, requestId, closure, at);
    const set = { recordIds: checked.recordIds, eventIds: checked.eventIds };
    await elma.erasure.steps.recordApproval(tenant, requestId, { required: false, startedAt: at.startedAt }, at);
    await elma.erasure.steps.purgeIndex(tenant, requestId, set, at);
    await elma.erasure.steps.purgeCaches(tenant, requestId, set, at);
    await elma.erasure.steps.shredKeys(tenant, requestId, set, at);
    const { deleted } = await elma.erasure.steps.deleteStreams(tenant, requestId, set, at);
    const { tombstones } = await elma.erasure.steps.writeTombstones(tenant, requestId, set, at);
    const verification = await elma.erasure.steps.verify(tenant, requestId, set, 1, at);
    expect(verification.passed).toBe(true);
    await elma.erasure.certification.certify(
      tenant,
      requestId,
      { set, held: checked.held, verification, approvedBy: null, approvedAt: null, streamsDeleted: deleted, tombstones },
      at,
    );
    return checked;
  };

  it('is erased with them: nothing of the subject is left, the pseudonym is forgotten, a new write gets a fresh stream', async () => {
    // Three memories of one day: consolidation summarises them.
    await elma.ingest.ingest(agent, event('asked for the pallet invoice of the Harwick depot', 0), 'req-1');
    await elma.ingest.ingest(agent, event('wants deliveries on tuesdays only', 5), 'req-2');
    await elma.ingest.ingest(agent, event('complained that the Quillfeather crates arrived late', 9), 'req-3');
    await settle();
    const before = (await elma.vault.subjectPseudonyms(tenant, [SUBJECT], { create: false })).get(SUBJECT);
    expect(before).toBeDefined();

    const { requestId } = await elma.erasure.requests.request(
      dpo,
      { scope: { type: 'subject', subject: SUBJECT }, reason: 'subject_request' },
      'req-e',
    );
    const at = { attempt: 1, startedAt: new Date().toISOString() };
    const { perRecord } = await elma.erasure.steps.authorize(tenant, requestId, at);
    const { seeds } = await elma.erasure.steps.locate(tenant, requestId, perRecord, at);
    const closure = await elma.erasure.steps.closure(tenant, requestId, seeds, at);
    expect(closure.recordIds).toHaveLength(3);

    // The consolidation the subject's writes triggered runs now: after the closure, before the purge.
    const result = await elma.consolidation.consolidateMany(tenant, await elma.consolidation.subjectRefs(tenant));
    expect(result.created).toBeGreaterThan(0);
    await settle();
    expect((await ofSubject()).length).toBeGreaterThan(3);

    await finish(requestId, closure);

    // Nothing derived from the subject's records outlives the erasure, and the mapping is gone with them.
    expect(await ofSubject()).toEqual([]);
    expect((await elma.vault.subjectPseudonyms(tenant, [SUBJECT], { create: false })).has(SUBJECT)).toBe(false);
    // The subject writes again: a fresh pseudonym and stream, not the deleted one.
    await elma.ingest.ingest(agent, event('came back with a new question about pallets', 30), 'req-4');
    const after = (await elma.vault.subjectPseudonyms(tenant, [SUBJECT], { create: false })).get(SUBJECT);
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
  }, 60_000);

  it('a held view keeps the subject’s pseudonym, and so its events stream: the subject still writes', async () => {
    const subject = 'held-view-subject';
    const of = (text: string, minute: number) => ({ ...event(text, minute), subject });
    await elma.ingest.ingest(agent, of('asked for the crate invoice of the Ossington depot', 0), 'req-h1');
    await elma.ingest.ingest(agent, of('I prefer deliveries on tuesdays.', 5), 'req-h2');
    await settle();
    expect((await elma.consolidation.consolidateMany(tenant, await elma.consolidation.subjectRefs(tenant))).created).toBeGreaterThan(0);
    await settle();
    const views: string[] = [];
    for await (const entry of elma.index.lineage(tenant))
      if (entry.subject === subject && entry.id.startsWith('mem_cs_')) views.push(entry.id);
    expect(views.length).toBeGreaterThan(0);
    // A matter holds the views alone: their inputs and events are erased, the views stay (restricted).
    await elma.holds.place(tenant, 'legal-1', { scope: { recordIds: views }, reason: 'MATTER-VIEW' });
    const pseudonym = (await elma.vault.subjectPseudonyms(tenant, [subject], { create: false })).get(subject);

    const { requestId } = await elma.erasure.requests.request(
      dpo,
      { scope: { type: 'subject', subject }, reason: 'subject_request' },
      'req-he',
    );
    const at = { attempt: 1, startedAt: new Date().toISOString() };
    const { perRecord } = await elma.erasure.steps.authorize(tenant, requestId, at);
    const { seeds } = await elma.erasure.steps.locate(tenant, requestId, perRecord, at);
    const checked = await finish(requestId, await elma.erasure.steps.closure(tenant, requestId, seeds, at));
    expect(checked.held.map((h) => h.recordId).sort()).toEqual([...views].sort());

    // The held views still name the subject, so the mapping stays (a hold must find them)...
    expect((await elma.vault.subjectPseudonyms(tenant, [subject], { create: false })).get(subject)).toBe(pseudonym);
    // ...and a new write of the subject is accepted, not refused for good by a deleted stream.
    const again = await elma.ingest.ingest(agent, of('came back with a new question about pallets', 30), 'req-h4');
    expect(again.events[0].duplicate).toBe(false);
  }, 60_000);

  it('a consolidation that read its inputs before they were shredded writes no view of them', async () => {
    const subject = 'shredded-inputs-subject';
    const of = (text: string, minute: number) => ({ ...event(text, minute), subject });
    const { events } = await elma.ingest.ingest(agent, of('I prefer deliveries on thursdays.', 0), 'req-s1');
    await settle();
    const inputs: string[] = [];
    for await (const entry of elma.index.lineage(tenant)) if (entry.subject === subject) inputs.push(entry.id);
    expect(inputs.length).toBeGreaterThan(0);
    // The erasure shreds the inputs' keys while they are still in the index: the consolidation's read of them.
    const { requestId } = await elma.erasure.requests.request(
      dpo,
      { scope: { type: 'records', recordIds: inputs }, reason: 'subject_request' },
      'req-se',
    );
    await elma.erasure.steps.shredKeys(
      tenant,
      requestId,
      { recordIds: inputs, eventIds: events.map((e) => e.id) },
      { attempt: 1, startedAt: new Date().toISOString() },
    );

    const result = await elma.consolidation.consolidateMany(tenant, [inputs[0]]);
    expect(result.created).toBe(0);
    expect(result.skippedErased).toBeGreaterThan(0);
  }, 60_000);
});
