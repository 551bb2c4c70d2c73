import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { SUBJECT_PSEUDONYM, streams, type Principal } from '@elma/domain';
import { callApi, chatEvent, e2eIndex, startTestApp, type TestApp } from '../testing';
import { RedTeam, pool, type Secret } from './harness';

/**
 * Subjects are named by random pseudonyms only: no stream, file, workflow id
 * or search attribute carries a subject's id, erasure destroys the mapping,
 * and no answer tells a caller a subject's pseudonym or stream.
 */
const run = Math.random().toString(36).slice(2, 8);
const SUBJECT = `pseu-subject-${run}`;
const CHINESE_SUBJECT = `客户假名${run}`;
const OTHER = `pseu-other-${run}`;

let t: TestApp;
let red: RedTeam;
let temporal: Connection;
const tokens: Record<string, string> = {};
const send = (who: string, method: string, path: string, body?: unknown) => red.send({ token: tokens[who], method, path, body });
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

function streamNames(): string[] {
  const db = new Database(join(t.dataDir, 'events.db'), { readonly: true });
  try {
    return db.prepare('SELECT DISTINCT stream FROM events UNION SELECT stream FROM deleted_streams').pluck().all() as string[];
  } finally {
    db.close();
  }
}

function fileNames(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? [relative(t.dataDir, join(dir, entry.name)), ...fileNames(join(dir, entry.name))]
      : [relative(t.dataDir, join(dir, entry.name))],
  );
}

async function pseudonymOf(subject: string): Promise<string | undefined> {
  return (await t.elma.vault.subjectPseudonyms('acme', [subject], { create: false })).get(subject);
}

async function ingest(subject: string, text: string) {
  const response = await send('agent', 'POST', '/v1/events', chatEvent(subject, text));
  expect(response.status, response.text).toBe(202);
  await strong();
  return JSON.parse(response.text).events[0].id as string;
}

/**
 * The workflows of this test's task queue as Temporal's visibility lists them: id, search attributes, and
 * the whole history with every payload (inputs, signals, activity arguments and results) decoded to text.
 */
async function workflows(): Promise<{ workflowId: string; attributes: string; history: Buffer }[]> {
  const client = new Client({ connection: temporal });
  const found: { workflowId: string; attributes: string; history: Buffer }[] = [];
  for await (const execution of client.workflow.list({
    query: `TaskQueue = '${t.taskQueue}' OR TaskQueue = '${t.taskQueue}-consolidation'`,
  })) {
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    found.push({
      workflowId: execution.workflowId,
      attributes: JSON.stringify(execution.searchAttributes ?? {}),
      history: Buffer.concat(bytesIn(history)),
    });
  }
  return found;
}

/** Every string and byte field of a history, as bytes (payload data are raw JSON). */
function bytesIn(value: unknown, out: Buffer[] = []): Buffer[] {
  if (typeof value === 'string') out.push(Buffer.from(value, 'utf8'));
  else if (ArrayBuffer.isView(value)) out.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  else if (value && typeof value === 'object') for (const item of Object.values(value)) bytesIn(item, out);
  return out;
}

/** Workflows whose id, search attributes or history name the subject. */
const naming = (listed: Awaited<ReturnType<typeof workflows>>, subject: string) =>
  listed
    .filter((w) => w.workflowId.includes(subject) || w.attributes.includes(subject) || w.history.includes(Buffer.from(subject)))
    .map((w) => w.workflowId);

async function settle(requestId: string) {
  for (let i = 0; i < 600; i++) {
    const progress = await send('compliance', 'GET', `/v1/erasures/${requestId}`);
    const status = JSON.parse(progress.text).status;
    if (['completed', 'denied', 'approval_timed_out', 'verification_failed', 'failed'].includes(status)) return status as string;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`erasure ${requestId} did not settle`);
}

beforeAll(async () => {
  t = await startTestApp({ temporal: { consolidateEveryEvents: 1 } });
  temporal = await Connection.connect({ address: inject('temporalAddress') });
  red = new RedTeam(t, 'pseudonyms');
  const mint = (sub: string, claims: Partial<Principal>) => red.token('acme', sub, claims);
  tokens.agent = await mint('agent-1', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
  tokens.compliance = await mint('compliance-1', { roles: ['compliance'], purposes: ['support'], clearance: 'restricted' });
  tokens.legal = await mint('legal-1', { roles: ['legal'], purposes: ['support'], clearance: 'restricted' });
  tokens.auditor = await mint('auditor-1', { roles: ['auditor'], purposes: [], clearance: 'internal' });
  tokens.admin = await mint('admin-1', { roles: ['admin'], purposes: ['support'], clearance: 'restricted' });
  tokens.self = await mint('self', { sub: SUBJECT, roles: [], purposes: ['support'], clearance: 'internal' });
}, 120_000);

afterAll(async () => {
  await temporal?.close();
  await (red ? red.close() : t?.close());
});

describe('subject pseudonyms', () => {
  it('names no stream, file, workflow or search attribute by a subject id', async () => {
    await ingest(SUBJECT, 'asked for the pallet invoice of the Harwick depot');
    await ingest(SUBJECT, 'wants deliveries on tuesdays only');
    await ingest(CHINESE_SUBJECT, '询问了哈威克仓库的托盘发票');
    await ingest(OTHER, 'another customer asked about the renewal');

    const names = streamNames();
    for (const subject of [SUBJECT, CHINESE_SUBJECT, OTHER]) {
      expect(names.filter((n) => n.includes(subject))).toEqual([]);
      expect(fileNames(t.dataDir).filter((n) => n.includes(subject))).toEqual([]);
      const pseudonym = await pseudonymOf(subject);
      expect(pseudonym).toMatch(SUBJECT_PSEUDONYM);
      expect(names).toContain(streams.events('acme', pseudonym!));
    }
    expect(names.filter((n) => n.startsWith('events-') && !SUBJECT_PSEUDONYM.test(n.split('-').slice(2).join('-')))).toEqual([]);

    // The projection's consolidation triggers started workflows: their ids and attributes name no subject.
    let listed: Awaited<ReturnType<typeof workflows>> = [];
    for (let i = 0; i < 100 && listed.length === 0; i++) {
      listed = await workflows();
      if (listed.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
    expect(listed.length).toBeGreaterThan(0);
    for (const subject of [SUBJECT, CHINESE_SUBJECT, OTHER]) expect(naming(listed, subject)).toEqual([]);
    // The check can see a subject: the histories hold the record ids the triggers passed.
    expect(listed.some((w) => w.history.includes(Buffer.from('mem_ep_')))).toBe(true);
  }, 60_000);

  it('answers nothing that names a live subject’s pseudonym or stream', async () => {
    const secrets: Secret[] = [];
    for (const subject of [SUBJECT, CHINESE_SUBJECT, OTHER]) {
      const pseudonym = (await pseudonymOf(subject))!;
      secrets.push({ id: pseudonym, marker: streams.events('acme', pseudonym), label: `pseudonym of ${subject}` });
    }
    const hold = await send('legal', 'POST', '/v1/legal-holds', { scope: { subjects: [OTHER] }, reason: 'MATTER-PSN' });
    expect(hold.status, hold.text).toBe(201);
    const holdId = JSON.parse(hold.text).id as string;
    const eventId = await ingest(SUBJECT, 'a third note about the Harwick depot invoice');
    const paths: [who: string, method: string, path: string, body?: unknown][] = [];
    for (const who of ['agent', 'compliance', 'legal', 'auditor', 'admin', 'self']) {
      paths.push(
        [who, 'POST', '/v1/events', chatEvent(SUBJECT, `probe note from ${who}`)],
        [who, 'POST', '/v1/events', { ...chatEvent(SUBJECT, 'x'), occurredAt: 'not a date' }],
        [who, 'POST', '/v1/recall', { query: 'Harwick depot invoice', purpose: 'support', budgetTokens: 2000 }],
        [who, 'POST', '/v1/recall', { query: '哈威克仓库的托盘发票', purpose: 'support', budgetTokens: 2000 }],
        [who, 'GET', `/v1/memories/mem_ep_${eventId}`],
        [who, 'GET', '/v1/legal-holds'],
        [who, 'GET', `/v1/audit?subject=${encodeURIComponent(SUBJECT)}`],
        [who, 'GET', `/v1/audit?subject=${encodeURIComponent(OTHER)}`],
        [who, 'GET', '/v1/audit'],
        [who, 'POST', '/v1/legal-holds', { scope: { subjects: [SUBJECT, 'never-seen-subject'] }, reason: 'MATTER-PROBE' }],
        [who, 'DELETE', `/v1/legal-holds/hold_${run}-missing`],
        [who, 'POST', '/v1/erasures', { scope: { type: 'subject', subject: `${SUBJECT}-not-this-one` }, reason: 'subject_request' }],
        [who, 'POST', '/v1/erasures', { scope: { type: 'subject' }, reason: 'subject_request' }],
        [who, 'GET', `/v1/memories/mem_${streams.events('acme', SUBJECT)}`],
        [who, 'GET', `/v1/memories/mem_ep_${SUBJECT}`],
        [who, 'GET', '/health'],
        [who, 'GET', '/metrics'],
        [who, 'POST', '/graphql', { query: `{ recall(input: { query: "Harwick", purpose: "support" }) { items { id text } } }` }],
        [who, 'POST', '/graphql', { query: `{ memory(id: "mem_ep_${eventId}") { id subject } }` }],
      );
    }
    await pool(paths, 4, ([who, method, path, body]) =>
      red.probe(`${who} ${method} ${path}`, { token: tokens[who], method, path, body }, secrets),
    );
    // Holds answer alike for a subject that has a stream and one that never wrote.
    const known = await send('legal', 'POST', '/v1/legal-holds', { scope: { subjects: [SUBJECT] }, reason: 'MATTER-A' });
    const unknown = await send('legal', 'POST', '/v1/legal-holds', { scope: { subjects: [`never-${run}`] }, reason: 'MATTER-A' });
    const shape = (text: string) => Object.keys(JSON.parse(text)).sort();
    expect(known.status).toBe(unknown.status);
    expect(shape(known.text)).toEqual(shape(unknown.text));
    // Release every hold (the probes placed some): a subject named by an active hold keeps its pseudonym.
    const active = JSON.parse((await send('legal', 'GET', '/v1/legal-holds')).text) as { items?: { id: string }[] } | { id: string }[];
    const ids = (Array.isArray(active) ? active : (active.items ?? [])).map((h) => h.id);
    expect(ids).toEqual(expect.arrayContaining([holdId, JSON.parse(known.text).id, JSON.parse(unknown.text).id]));
    for (const id of ids) expect((await send('legal', 'DELETE', `/v1/legal-holds/${id}`)).status).toBeLessThan(300);
    expect(red.leaks).toEqual([]);
    expect(red.serverErrors).toEqual([]);
  }, 120_000);

  it('erasing a subject destroys the mapping: the certificate names only the pseudonym, a new write gets a fresh one', async () => {
    const before = await Promise.resolve()
      .then(() => pseudonymOf(SUBJECT))
      .catch(() => undefined);
    const request = await send('compliance', 'POST', '/v1/erasures', {
      scope: { type: 'subject', subject: SUBJECT },
      reason: 'subject_request',
    });
    expect(request.status, request.text).toBe(202);
    const requestId = JSON.parse(request.text).requestId as string;
    expect(await settle(requestId)).toBe('completed');
    const mappedAfterErasure = await Promise.resolve()
      .then(() => pseudonymOf(SUBJECT))
      .catch(() => 'no mapping at all');
    const reverseAfterErasure = await Promise.resolve()
      .then(() => t.elma.vault.subjectsOfPseudonyms('acme', [before!]))
      .catch(() => 'no mapping at all');
    // Before pseudonyms this write hit the erased subject's deleted stream: 410, naming the stream (and so the subject).
    const again = await red.probe(
      'write again after erasure',
      { token: tokens.agent, method: 'POST', path: '/v1/events', body: chatEvent(SUBJECT, 'came back with a new question about pallets') },
      [{ id: streams.events('acme', SUBJECT), marker: 'STREAM_DELETED', label: 'the erased subject’s old stream' }],
    );
    expect(again.status, again.text).toBe(202);
    await strong();

    const certificate = await send('compliance', 'GET', `/v1/erasures/${requestId}/certificate`);
    expect(certificate.status, certificate.text).toBe(200);
    expect(JSON.parse(certificate.text).certificate.request.scope).toEqual({ type: 'subject', subjectPseudonym: before });
    expect(certificate.text).not.toContain(SUBJECT);
    // Nobody can map the subject to the pseudonym any more, nor back.
    expect(mappedAfterErasure).toBeUndefined();
    expect(reverseAfterErasure).toEqual(new Map());
    expect(streamNames().filter((n) => n.includes(before!))).toEqual([]);
    // The other subjects keep theirs.
    expect(await pseudonymOf(OTHER)).toMatch(SUBJECT_PSEUDONYM);

    const after = await pseudonymOf(SUBJECT);
    expect(after).toMatch(SUBJECT_PSEUDONYM);
    expect(after).not.toBe(before);
    expect(streamNames()).toContain(streams.events('acme', after!));

    const listed = await workflows();
    expect(listed.some((w) => w.workflowId.includes(requestId))).toBe(true);
    expect(naming(listed, SUBJECT)).toEqual([]);
    expect(red.leaks).toEqual([]);
    expect(red.serverErrors).toEqual([]);
  }, 120_000);

  it('a data subject erasing their own records gets a certificate that names them by pseudonym only', async () => {
    const self = await red.token('acme', 'subject-self', { sub: CHINESE_SUBJECT, roles: [], purposes: ['support'], clearance: 'internal' });
    const policy = JSON.parse((await send('admin', 'GET', '/v1/policy')).text);
    const { version, ...document } = policy;
    document.rules.push({ id: 'erase-own', operations: ['erase'], when: { ownerIsSubject: true, crossPurpose: true } });
    const put = await send('admin', 'PUT', `/v1/policy?expectedVersion=${version}`, document);
    expect(put.status, put.text).toBe(200);
    await ingest(CHINESE_SUBJECT, '我想删除关于托盘发票的记录');
    const pseudonym = await pseudonymOf(CHINESE_SUBJECT);
    expect(pseudonym).toMatch(SUBJECT_PSEUDONYM);

    const request = await red.send({
      token: self,
      method: 'POST',
      path: '/v1/erasures',
      body: { scope: { type: 'subject', subject: CHINESE_SUBJECT }, reason: 'subject_request' },
    });
    expect(request.status, request.text).toBe(202);
    const requestId = JSON.parse(request.text).requestId as string;
    expect(await settle(requestId)).toBe('completed');

    const certificate = await send('compliance', 'GET', `/v1/erasures/${requestId}/certificate`);
    expect(certificate.status, certificate.text).toBe(200);
    expect(JSON.parse(certificate.text).certificate.request).toMatchObject({
      requestedBy: pseudonym,
      scope: { type: 'subject', subjectPseudonym: pseudonym },
    });
    expect(certificate.text).not.toContain(CHINESE_SUBJECT);
    expect(await pseudonymOf(CHINESE_SUBJECT)).toBeUndefined();
  }, 120_000);

  it('a folder made before pseudonyms is migrated on open, and its subjects are erased through the mapping', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-migrated-'));
    const fixture = join(__dirname, '../../../../tests/fixtures/pre-pseudonyms');
    // With the index on Elasticsearch the folder has no index files: the fixture's embedded ones would be a
    // copy of the subject that this erasure does not reach (and its byte scan rightly finds).
    cpSync(fixture, dir, { recursive: true, filter: (src) => e2eIndex === 'sqlite' || src !== join(fixture, 'index') });
    const old = await startTestApp({ dataDir: dir, temporal: {} });
    try {
      const subject = '夹具客户二';
      const pseudonym = (await old.elma.vault.subjectPseudonyms('acme', [subject], { create: false })).get(subject);
      expect(pseudonym).toMatch(SUBJECT_PSEUDONYM);
      const compliance = await old.token({ sub: 'compliance-1', roles: ['compliance'], purposes: ['support'], clearance: 'restricted' });
      const request = await callApi(old.url, compliance, 'POST', '/v1/erasures', {
        scope: { type: 'subject', subject },
        reason: 'subject_request',
      });
      expect(request.status, request.text).toBe(202);
      let status = '';
      for (let i = 0; i < 600 && !['completed', 'failed', 'verification_failed'].includes(status); i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = (await callApi(old.url, compliance, 'GET', `/v1/erasures/${request.body.requestId}`)).body.status;
      }
      expect(status).toBe('completed');
      const certificate = await callApi(old.url, compliance, 'GET', `/v1/erasures/${request.body.requestId}/certificate`);
      expect(certificate.body.certificate.request.scope).toEqual({ type: 'subject', subjectPseudonym: pseudonym });
      expect(certificate.body.certificate.closure.streamsDeleted).toBeGreaterThan(0);
      const db = new Database(join(dir, 'events.db'), { readonly: true });
      const names = db.prepare('SELECT DISTINCT stream FROM events').pluck().all() as string[];
      db.close();
      expect(names).not.toContain(streams.events('acme', pseudonym!));
      expect(names.filter((n) => n.includes(subject))).toEqual([]);
      expect((await old.elma.vault.subjectPseudonyms('acme', [subject], { create: false })).has(subject)).toBe(false);
      // The other migrated subject of the tenant, under its legal hold, keeps its stream.
      const held = (await old.elma.vault.subjectPseudonyms('acme', ['fixture-subject-one'], { create: false })).get('fixture-subject-one');
      expect(names).toContain(streams.events('acme', held!));
    } finally {
      await old.close();
    }
  }, 120_000);
});
