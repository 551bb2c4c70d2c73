import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { ERASURE_STEPS, type Principal } from '@elma/domain';
import { verifySignedCertificate } from '@elma/infra';
import { ensureRetentionSchedule } from '@elma/worker';
import { filesContaining, inspectIndices, localNode, segmentCounts, shardFolders } from '../../../tests/support/elasticsearch-files';
import {
  callApi,
  changePolicy,
  chatEvent,
  deriveMemory,
  roleTokens,
  startTestApp,
  type Json,
  type TestApp,
  settleErasure,
} from './testing';

let t: TestApp;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

async function ingest(events: unknown[]) {
  const response = await call('agent', 'POST', '/v1/events', { events });
  expect(response.status, response.text).toBe(202);
  await strong();
  return response.body.events as { id: string }[];
}

async function recallTexts(query: string, who = 'agent') {
  await strong();
  const response = await call(who, 'POST', '/v1/recall', { query, purpose: 'support', budgetTokens: 4000 });
  expect(response.status, response.text).toBe(200);
  return (response.body.items as { text: string }[]).map((i) => i.text);
}

/** Polls progress until the erasure leaves the running states. */
const settle = (id: string, who = 'compliance', until?: string[]) => settleErasure(t.url, tokens[who], id, until);

async function erase(scope: unknown, who = 'compliance', reason = 'subject_request') {
  const response = await call(who, 'POST', '/v1/erasures', { scope, reason });
  expect(response.status, response.text).toBe(202);
  return response.body.requestId as string;
}

const setPolicy = (change: (policy: Json) => void) => changePolicy(t.url, tokens.admin, change);

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  Object.assign(tokens, await roleTokens(t, ['agent', 'compliance', 'dpo', 'legal', 'admin']));
  const mint = (sub: string, claims: Partial<Principal>) => t.token({ sub, ...claims });
  tokens.dpo2 = await mint('dpo-2', { roles: ['dpo'], purposes: ['support'], clearance: 'restricted' });
  tokens.auditor = await mint('auditor-1', { roles: ['auditor'], purposes: [], clearance: 'internal' });
  tokens.self = await mint('cust-self', { roles: [], purposes: ['support'], clearance: 'internal' });
}, 120_000);
afterAll(async () => t?.close());

describe('erasure of a data subject, end to end on Temporal', () => {
  // The texts the byte scans look for carry this run's mark: the Elasticsearch scan reads the whole node's folder,
  // which other suites share (subject-access's fixtures tell the same story), so only this run's copy may match.
  const mark = randomBytes(4).toString('hex');
  const secretEn = `Zephyrine Quillfeather keeps her spare house key under the blue ceramic frog (ref ${mark})`;
  const secretZh = `张伟的护照放在书房第三个抽屉里，密码箱编号七二九（${mark}）`;
  const invoiceChannel = `postal mail to Quillfeather Lane ${mark}`;
  const bystander = 'Bartholomew Finchley prefers morning calls about the blue ceramic frog order';
  let requestId: string;
  let closureIds: string[];
  let subjectPseudonym: string | undefined;

  beforeAll(async () => {
    const [e1, e2] = await ingest([
      chatEvent('cust-7', secretEn),
      chatEvent('cust-7', secretZh),
      chatEvent('cust-7', 'Customer asked about invoice delivery', {
        content: {
          text: 'Customer asked about invoice delivery',
          fact: { entity: 'cust-7', attribute: 'invoice_channel', value: invoiceChannel },
        },
      }),
      chatEvent('cust-8', bystander),
    ]);
    await deriveMemory(t.url, tokens.agent, 'Summary: Zephyrine hides a key under a frog and keeps a passport in a drawer', [e1.id, e2.id]);
    await deriveMemory(t.url, tokens.agent, 'Second-order note built on the Zephyrine summary', [e1.id]);
    await strong();
    expect((await recallTexts('Zephyrine spare house key ceramic frog')).join('\n')).toContain('Zephyrine');
  });

  it('refuses a caller without compliance or dpo, with a problem+json, and stores nothing', async () => {
    const response = await call('agent', 'POST', '/v1/erasures', {
      scope: { type: 'subject', subject: 'cust-7' },
      reason: 'subject_request',
    });
    expect(response.status).toBe(403);
    expect(response.contentType).toContain('application/problem+json');
    expect(response.body.code).toBe('AUTH.FORBIDDEN');
    const invalid = await call('compliance', 'POST', '/v1/erasures', { scope: { type: 'subject' }, reason: 'because' });
    expect(invalid.status).toBe(422);
    expect(invalid.body.code).toBe('REQUEST.VALIDATION_FAILED');
  });

  it('runs every step and reports them with times and attempts', async () => {
    requestId = await erase({ type: 'subject', subject: 'cust-7' });
    expect(requestId).toMatch(/^era_/);
    const done = await settle(requestId);
    expect(done.status, JSON.stringify(done.failure)).toBe('completed');
    expect(done.steps.map((s: { step: string }) => s.step)).toEqual([...ERASURE_STEPS]);
    for (const step of done.steps) {
      expect(step.attempts).toBeGreaterThanOrEqual(1);
      expect(Date.parse(step.finishedAt)).toBeGreaterThanOrEqual(Date.parse(step.startedAt));
    }
    // 3 episodic + 1 semantic fact + the summary citing two of the events + the note citing one.
    expect(done.closureSize).toBe(6);
    expect(done.certificateAvailable).toBe(true);
  });

  it('issues a certificate that verifies against the published keys and fails when altered', async () => {
    const certificate = await call('auditor', 'GET', `/v1/erasures/${requestId}/certificate`);
    expect(certificate.status, certificate.text).toBe(200);
    const keys = await fetch(`${t.url}/.well-known/elma-keys`).then((r) => r.json());
    expect(verifySignedCertificate(certificate.body, keys)).toMatchObject({ ok: true });
    const tampered = JSON.parse(certificate.text.replace('"size":6', '"size":5'));
    expect(verifySignedCertificate(tampered, keys)).toMatchObject({ ok: false });

    const c = certificate.body.certificate;
    closureIds = c.closure.records.map((r: { id: string }) => r.id);
    subjectPseudonym = c.request.scope.subjectPseudonym;
    expect(c.request.scope.type).toBe('subject');
    expect(certificate.text).not.toContain('cust-7');
    expect(certificate.text).not.toContain('Zephyrine');
    expect(c.closure.byKind).toEqual({ episodic: 3, semantic: 3 });
    expect(c.verification.passed).toBe(true);
    for (const probe of ['getById', 'bm25', 'knn', 'byteScan']) expect(c.verification[probe]).toMatchObject({ checked: 6, failed: 0 });
    expect(c.verification.decrypt.failed).toBe(0);
    // The embedded log deletes in place; the certificate says so (EventStoreDB would report its scavenge).
    expect(c.verification.logCompaction).toEqual({ engine: 'sqlite', method: 'in_place', requested: false, completed: true });
    // The embedded index's files are scanned too; an Elasticsearch index lives on its own nodes (checked below when local).
    const indexFiles = t.elma.config.index === 'sqlite' ? ['index/tenant-acme.db', 'index/tenant-acme.usearch'] : [];
    expect(c.verification.byteScan.paths).toEqual(expect.arrayContaining(['events.db', 'keys.db', ...indexFiles]));
    expect(c.verification.byteScan.paths.some((p: string) => p.endsWith('temporal.db'))).toBe(true);

    // Anchored to the audit chain: the entry with that seq has that hash and closes this erasure.
    const audit = await call('auditor', 'GET', `/v1/audit?resource=erasure/${requestId}`);
    const entries = audit.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(entries.find((e) => e.seq === c.auditAnchor.seq)).toMatchObject({ hash: c.auditAnchor.hash, operation: 'erase' });
    expect(entries.filter((e) => e.resourceIds.includes('step/verify'))).toHaveLength(1);

    // The audit chain outlives erasure: it names the data subject only by a keyed pseudonym, still searchable.
    const trail = await call('auditor', 'GET', '/v1/audit');
    expect(trail.text).not.toContain('cust-7');
    const bySubject = await call('auditor', 'GET', '/v1/audit?subject=cust-7');
    expect(
      bySubject.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).subject),
    ).toEqual(expect.arrayContaining([expect.stringMatching(/^sfp_[0-9a-f]{64}$/)]));

    const pdf = await call('compliance', 'GET', `/v1/erasures/${requestId}/certificate.pdf`);
    expect(pdf.status).toBe(200);
    expect(pdf.contentType).toBe('application/pdf');
    expect(pdf.bytes.subarray(0, 8).toString()).toBe('%PDF-1.7');
  });

  it('leaves nothing to find: recall, get-by-id, and the bytes on disk', async () => {
    expect((await recallTexts('Zephyrine spare house key ceramic frog passport')).join('\n')).not.toMatch(/Zephyrine|张伟/);
    expect(await recallTexts('张伟 护照 抽屉 密码箱')).not.toContain(secretZh);
    for (const id of closureIds) expect((await call('agent', 'GET', `/v1/memories/${id}`)).status).toBe(404);
    await t.elma.index.flush();
    for (const needle of [secretEn, secretZh, invoiceChannel]) {
      expect(filesContaining(t.dataDir, Buffer.from(needle))).toEqual([]);
    }
    const es = t.elma.config.elasticsearch;
    const esFolder = process.env.ELMA_E2E_ELASTICSEARCH_DATA;
    if (es && esFolder) {
      // The node's files, on this machine: raw bytes (translog included), and what its Lucene indices hold in live
      // or deleted documents, since stored fields are compressed (stored fields, terms, doc values, vectors).
      const node = await localNode(es.url, esFolder);
      const indices = [`${es.namespace}-*`];
      const ids = [...closureIds, ...(subjectPseudonym ? [subjectPseudonym] : [])];
      for (const needle of [secretEn, secretZh, invoiceChannel, ...ids]) {
        expect({ needle, files: filesContaining(node.folder, Buffer.from(needle)) }).toEqual({ needle, files: [] });
      }
      // Other suites on the same node may name a cust-7 too: the subject is looked for in this app's shards only.
      for (const { folder } of await shardFolders(node, indices)) expect(filesContaining(folder, Buffer.from('cust-7'))).toEqual([]);
      const words = ['zephyrine', 'quillfeather', '张伟', '护照', '密码箱'];
      // The force-merge left no deleted document in the records' segments (usage counts are rewritten by the recalls above).
      expect(Object.values(await segmentCounts(es.url, [`${es.namespace}-acme-memories`])).map((c) => c.deleted)).toEqual([0]);
      // The projection embeds a record's text: the vectors of the two secrets, and of the other subject's record.
      const vectors = await t.elma.embedder.embed([secretEn, secretZh, bystander], 'document');
      const inspection = await inspectIndices(node, indices, {
        texts: [secretEn, secretZh, ...words, 'cust-7', ...ids, 'bartholomew'],
        vectors,
      });
      // The other subject's record, read by the same inspection, shows it sees what the indices hold.
      const control = (h: { needle: string }) => h.needle === 'bartholomew' || h.needle === 'vector #2';
      expect(inspection.hits.filter((h) => !control(h))).toEqual([]);
      expect(new Set(inspection.hits.filter((h) => control(h) && !h.deleted).map((h) => `${h.needle} ${h.in}`))).toEqual(
        new Set(['bartholomew stored', 'bartholomew terms', 'vector #2 vectors']),
      );
    } else if (es) {
      console.log(
        "erasure e2e: ELMA_E2E_ELASTICSEARCH_DATA is not set, so the Elasticsearch node's files are not checked (get/recall probes only)",
      );
    }
    // Another subject's record that shares words is untouched.
    expect((await recallTexts('Bartholomew Finchley morning calls')).join('\n')).toContain('Bartholomew');
  });

  it('refuses the same content for the same subject again (tombstone), not for another subject', async () => {
    const again = await call(
      'agent',
      'POST',
      '/v1/events',
      chatEvent('cust-7', `  ${secretEn.toUpperCase()} `, { source: { system: 'backup-restore', channel: 'chat' } }),
    );
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ERASURE.CONTENT_ERASED');
    expect(again.text).not.toContain('Zephyrine');
    const other = await call('agent', 'POST', '/v1/events', chatEvent('cust-99', secretEn));
    expect(other.status, other.text).toBe(202);
  });

  it('rebuilding the views from the log does not bring anything back', async () => {
    await t.elma.views.drop('acme');
    await t.elma.views.replay('acme');
    for (const id of closureIds) expect(await t.elma.index.get('acme', id)).toBeUndefined();
  });
});

describe('erasure under legal hold, approval and verification', () => {
  it('restricts held records instead of erasing them and lists them in the certificate', async () => {
    const [held, free] = await ingest([
      chatEvent('cust-9', 'Held evidence: contract dispute call recording'),
      chatEvent('cust-9', 'Free note: likes jazz'),
    ]);
    const hold = await call('legal', 'POST', '/v1/legal-holds', { scope: { recordIds: [`mem_ep_${held.id}`] }, reason: 'MATTER-42' });
    expect(hold.status, hold.text).toBe(201);
    const id = await erase({ type: 'subject', subject: 'cust-9' });
    const done = await settle(id);
    expect(done.status).toBe('completed');
    expect(done.blockedByLegalHold).toEqual([`mem_ep_${held.id}`]);
    const certificate = (await call('compliance', 'GET', `/v1/erasures/${id}/certificate`)).body.certificate;
    expect(certificate.legalHoldExceptions).toEqual([{ recordId: `mem_ep_${held.id}`, holdIds: [hold.body.id] }]);
    expect(certificate.closure.records.map((r: { id: string }) => r.id)).toEqual([`mem_ep_${free.id}`]);
    expect((await call('legal', 'GET', `/v1/memories/mem_ep_${held.id}`)).status).toBe(200);
    expect((await call('legal', 'GET', `/v1/memories/mem_ep_${free.id}`)).status).toBe(404);
  });

  it('waits for a second DPO above the threshold, refusing self-approval and other roles', async () => {
    await setPolicy((p) => (p.erasure = { approvalThreshold: 1, approvalTimeoutHours: 1 }));
    await ingest([chatEvent('cust-10', 'first note'), chatEvent('cust-10', 'second note')]);
    const id = await erase({ type: 'subject', subject: 'cust-10' }, 'dpo');
    const waiting = await settle(id, 'dpo', ['awaiting_approval', 'completed', 'failed']);
    expect(waiting.status).toBe('awaiting_approval');
    expect(waiting.closureSize).toBe(2);
    expect((await call('dpo', 'POST', `/v1/erasures/${id}/approve`)).body.code).toBe('ERASURE.SELF_APPROVAL');
    expect((await call('compliance', 'POST', `/v1/erasures/${id}/approve`)).body.code).toBe('AUTH.FORBIDDEN');
    const approved = await call('dpo2', 'POST', `/v1/erasures/${id}/approve`);
    expect(approved.status, approved.text).toBe(200);
    expect((await settle(id, 'dpo')).status).toBe('completed');
    expect((await call('dpo', 'GET', `/v1/erasures/${id}/certificate`)).body.certificate.request.approvedBy).toBe('dpo-2');
    expect((await call('dpo2', 'POST', `/v1/erasures/${id}/approve`)).body.code).toBe('ERASURE.NOT_AWAITING_APPROVAL');
  });

  it('fails visibly when no approval comes in time, and issues no certificate', async () => {
    await setPolicy((p) => (p.erasure = { approvalThreshold: 0, approvalTimeoutHours: 0.0005 }));
    await ingest([chatEvent('cust-11', 'a note nobody approves erasing')]);
    const id = await erase({ type: 'subject', subject: 'cust-11' });
    const done = await settle(id);
    expect(done.status).toBe('approval_timed_out');
    expect(done.failure.code).toBe('ERASURE.APPROVAL_TIMEOUT');
    expect((await call('compliance', 'GET', `/v1/erasures/${id}/certificate`)).body.code).toBe('ERASURE.CERTIFICATE_NOT_READY');
    expect(await recallTexts('a note nobody approves erasing')).toContain('a note nobody approves erasing');
    await setPolicy((p) => (p.erasure = { approvalThreshold: 100, approvalTimeoutHours: 168 }));
  });

  it('fails verification loudly when a copy survives outside the purge, with no certificate', async () => {
    const leftover = 'Orlaith Vantongeren account recovery phrase is copper lantern meadow';
    await ingest([chatEvent('cust-12', leftover)]);
    // A stray copy the purge does not know about (an unmanaged backup in the data folder).
    writeFileSync(join(t.dataDir, 'stray-backup.txt'), `dump: ${leftover}\n`);
    const id = await erase({ type: 'subject', subject: 'cust-12' });
    const done = await settle(id);
    expect(done.status).toBe('verification_failed');
    expect(done.failure.code).toBe('ERASURE.VERIFICATION_FAILED');
    expect(done.certificateAvailable).toBe(false);
    expect((await call('compliance', 'GET', `/v1/erasures/${id}/certificate`)).status).toBe(409);
  });

  it('lets data subjects erase their own records only where the policy allows it', async () => {
    await ingest([chatEvent('cust-self', 'my own note to forget')]);
    const denied = await erase({ type: 'subject', subject: 'cust-self' }, 'self');
    expect((await settle(denied, 'self')).status).toBe('denied');
    expect(
      (await call('self', 'POST', '/v1/erasures', { scope: { type: 'subject', subject: 'someone-else' }, reason: 'subject_request' }))
        .status,
    ).toBe(403);

    await setPolicy((p) => p.rules.push({ id: 'erase-own', operations: ['erase'], when: { ownerIsSubject: true, crossPurpose: true } }));
    const allowed = await erase({ type: 'subject', subject: 'cust-self' }, 'self');
    expect((await settle(allowed, 'self')).status).toBe('completed');
    expect((await call('agent', 'GET', `/v1/erasures/${allowed}`)).status).toBe(404);
    // The subject acted under the pseudonym their erasure forgot, even downloading the certificate afterwards:
    // nothing in the audit trail names them.
    const certificate = await call('self', 'GET', `/v1/erasures/${allowed}/certificate`);
    expect(certificate.status, certificate.text).toBe(200);
    const pseudonym = certificate.body.certificate.request.requestedBy as string;
    expect(pseudonym).toMatch(/^psn_[0-9a-f]{32}$/);
    const trail = await call('auditor', 'GET', `/v1/audit?resource=${encodeURIComponent(`erasure/${allowed}`)}`);
    expect(trail.status, trail.text).toBe(200);
    const downloads = trail.text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Json)
      .filter((e) => (e.resourceIds as string[]).includes('certificate') && e.operation === 'export');
    expect(downloads.map((e) => e.actor)).toEqual([pseudonym]);
    expect((await call('auditor', 'GET', '/v1/audit')).text).not.toContain('cust-self');
  });

  it('erases by record id (with what derives from it) and by a time range of one subject', async () => {
    const [a, b] = await ingest([chatEvent('cust-14', 'record-scoped note one'), chatEvent('cust-14', 'record-scoped note two')]);
    const byId = await erase({ type: 'records', recordIds: [`mem_ep_${a.id}`, 'mem_ep_does-not-exist'] }, 'compliance', 'correction');
    expect((await settle(byId)).closureSize).toBe(1);
    expect((await call('agent', 'GET', `/v1/memories/mem_ep_${a.id}`)).status).toBe(404);
    expect((await call('agent', 'GET', `/v1/memories/mem_ep_${b.id}`)).status).toBe(200);

    const from = new Date(Date.now() - 60_000).toISOString();
    await ingest([chatEvent('cust-15', 'recent note in the window'), chatEvent('cust-16', 'another subject, same window')]);
    const to = new Date(Date.now() + 60_000).toISOString();
    const windowed = await erase({ type: 'time_range', from, to, subject: 'cust-15' }, 'compliance', 'legal');
    const done = await settle(windowed);
    expect(done).toMatchObject({ status: 'completed', closureSize: 1 });
    const certificate = (await call('compliance', 'GET', `/v1/erasures/${windowed}/certificate`)).body.certificate;
    expect(certificate.request.scope).toMatchObject({
      type: 'time_range',
      from,
      to,
      subjectPseudonym: expect.stringMatching(/^psn_[0-9a-f]{32}$/),
    });
    expect(await recallTexts('another subject, same window')).toContain('another subject, same window');
  });

  it('erases by content fingerprint and by record id through GraphQL', async () => {
    const [e] = await ingest([chatEvent('cust-13', 'GraphQL-erased reminder: renew the Hollowbrook lease')]);
    const mutation = `mutation($input: ErasureRequestInput!) { requestErasure(input: $input) { requestId status } }`;
    const gql = (query: string, variables: unknown) => call('compliance', 'POST', '/graphql', { query, variables });
    const started = await gql(mutation, {
      input: { reason: 'correction', scope: { type: 'content', text: 'graphql-erased REMINDER: renew the Hollowbrook lease' } },
    });
    expect(started.body.errors, started.text).toBeUndefined();
    const id = started.body.data.requestErasure.requestId;
    expect((await settle(id)).status).toBe('completed');
    const viewed = await gql(`query($id: ID!) { erasure(id: $id) { status closureSize steps { step attempts } } }`, { id });
    expect(viewed.body.data.erasure).toMatchObject({ status: 'completed', closureSize: 1 });
    expect((await call('agent', 'GET', `/v1/memories/mem_ep_${e.id}`)).status).toBe(404);
  });
});

describe('the retention sweep (a Temporal Schedule)', () => {
  it('erases expired records that are not on hold through a child erasure, one certificate per tenant and run', async () => {
    await setPolicy((p) => (p.retentionDays = { ...p.retentionDays, session: 0.00003 })); // about 2.6 s
    const [expired, kept, held] = await ingest([
      chatEvent('cust-20', 'session-only chatter about the Wexford parcel', { retention: 'session' }),
      chatEvent('cust-20', 'kept for a year: Wexford parcel insurance claim', { retention: 'standard' }),
      chatEvent('cust-21', 'session note under hold about the Wexford audit', { retention: 'session' }),
    ]);
    await call('legal', 'POST', '/v1/legal-holds', { scope: { subjects: ['cust-21'] }, reason: 'MATTER-77' });
    // A working memory that expires, and its promotion, which keeps its own (standard) retention.
    const working = await call('agent', 'POST', '/v1/memories', {
      kind: 'working',
      content: { text: 'Wexford caller waits for a depot callback' },
      sourceEventIds: [kept.id],
      session: 's-20',
      ttlSeconds: 2,
      purposes: ['support'],
    });
    expect(working.status, working.text).toBe(201);
    const promoted = await call('agent', 'POST', `/v1/memories/${working.body.memory.id}/promote`, { session: 's-20' });
    expect(promoted.status, promoted.text).toBe(201);
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await recallTexts('Wexford parcel')).not.toContain('session-only chatter about the Wexford parcel');

    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const scheduleId = `retention-${t.taskQueue}`;
      await ensureRetentionSchedule({ connection, taskQueue: t.taskQueue }, 60, scheduleId);
      await ensureRetentionSchedule({ connection, taskQueue: t.taskQueue }, 30, scheduleId); // idempotent: updates
      const client = new Client({ connection });
      const schedule = client.schedule.getHandle(scheduleId);
      expect((await schedule.describe()).spec.intervals?.[0]?.every).toBe(30 * 60_000);
      await schedule.trigger();
      let sweepId: string | undefined;
      for (let i = 0; !sweepId && i < 100; i++) {
        sweepId = (await schedule.describe()).info.recentActions[0]?.action.workflow.workflowId;
        if (!sweepId) await new Promise((r) => setTimeout(r, 100));
      }
      const sweep = await client.workflow.getHandle(sweepId!).result();
      await schedule.delete();
      const mine = sweep.erasures.filter((e: { tenant: string }) => e.tenant === 'acme');
      expect(mine).toHaveLength(1);
      const certificate = (await call('compliance', 'GET', `/v1/erasures/${mine[0].requestId}/certificate`)).body.certificate;
      expect(certificate.request.reason).toBe('retention');
      expect(certificate.request.scope.type).toBe('expired');
      expect(certificate.closure.records.map((r: { id: string }) => r.id).sort()).toEqual(
        [`mem_ep_${expired.id}`, working.body.memory.id].sort(),
      );
      expect(certificate.legalHoldExceptions).toHaveLength(1);
    } finally {
      await connection.close();
    }
    expect((await recallTexts('Wexford parcel insurance claim')).join('\n')).toContain('kept for a year');
    expect((await call('legal', 'GET', `/v1/memories/mem_ep_${expired.id}`)).status).toBe(404);
    expect((await call('legal', 'GET', `/v1/memories/mem_ep_${held.id}`)).status).toBe(200);
    expect((await call('agent', 'GET', `/v1/memories/mem_ep_${kept.id}`)).status).toBe(200);
    expect((await call('agent', 'GET', `/v1/memories/${promoted.body.memory.id}`)).status).toBe(200);
  }, 60_000);
});
