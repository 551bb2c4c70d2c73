import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { SubjectExport, type Principal } from '@elma/domain';
import { mintToken, readPdf, verifySignedDocument } from '@elma/infra';
import { verifyCertificateCommand } from '../../cli/src/commands/verify-certificate';
import { callApi, changePolicy, chatEvent, deriveMemory, roleTokens, startTestApp, type Json, type TestApp } from './testing';

let t: TestApp;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function ingest(events: unknown[]) {
  const response = await call('agent', 'POST', '/v1/events', { events });
  expect(response.status, response.text).toBe(202);
  await strong();
  return response.body.events as { id: string }[];
}

/** Polls the request until it leaves `running`. */
async function settle(id: string, who = 'dpo'): Promise<Json> {
  for (let i = 0; i < 600; i++) {
    const progress = await call(who, 'GET', `/v1/subject-access/${id}`);
    expect(progress.status, progress.text).toBe(200);
    if (progress.body.status !== 'running') return progress.body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`subject access ${id} did not settle`);
}

async function requestFor(subject: string | undefined, who = 'dpo'): Promise<string> {
  const response = await call(who, 'POST', '/v1/subject-access', subject === undefined ? {} : { subject });
  expect(response.status, response.text).toBe(202);
  expect(response.body.requestId).toMatch(/^sar_/);
  return response.body.requestId as string;
}

/** Audit entries of a resource, as the auditor exports them. */
async function auditOf(resource: string): Promise<Json[]> {
  const audit = await call('auditor', 'GET', `/v1/audit?resource=${encodeURIComponent(resource)}`);
  expect(audit.status, audit.text).toBe(200);
  return audit.text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

const secretEn = 'Zephyrine Quillfeather keeps her spare house key under the blue ceramic frog';
const secretZh = '张伟的护照放在书房第三个抽屉里，密码箱编号七二九';
const restrictedText = 'Zephyrine Quillfeather medical note: allergic to penicillin';
const bystander = 'Bartholomew Finchley prefers morning calls about the blue ceramic frog order';

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  Object.assign(tokens, await roleTokens(t, ['agent', 'compliance', 'dpo', 'legal', 'admin']));
  const mint = (sub: string, claims: Partial<Principal>) => t.token({ sub, ...claims });
  tokens.auditor = await mint('auditor-1', { roles: ['auditor'], purposes: [], clearance: 'internal' });
  tokens.cust7 = await mint('cust-7', { roles: [], purposes: ['support'], clearance: 'internal' });
  tokens.cust8 = await mint('cust-8', { roles: [], purposes: ['support'], clearance: 'internal' });
  tokens.otherTenantDpo = await mint('dpo-1', { tenant: 'globex', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' });
}, 120_000);
afterAll(async () => t?.close());

describe('subject access (GDPR Art. 15/20), end to end on Temporal', () => {
  let ids: { en: string; zh: string; restricted: string; other: string; shared: string; own: string };
  let requestId: string;
  let exportJson: Buffer;
  let exportPdf: Buffer;
  let manifest: Json;

  beforeAll(async () => {
    const [en, zh, restricted, other] = await ingest([
      chatEvent('cust-7', secretEn),
      chatEvent('cust-7', secretZh),
      chatEvent('cust-7', restrictedText, { sensitivity: 'restricted' }),
      chatEvent('cust-8', bystander),
    ]);
    // A record derived from both subjects' events, and one from cust-7's alone.
    const shared = await deriveMemory(t.url, tokens.agent, 'Zephyrine and Bartholomew both asked about the blue ceramic frog', [
      en.id,
      other.id,
    ]);
    const own = await deriveMemory(t.url, tokens.agent, '张伟 (Zephyrine) keeps documents at home', [en.id, zh.id]);
    ids = {
      en: `mem_ep_${en.id}`,
      zh: `mem_ep_${zh.id}`,
      restricted: `mem_ep_${restricted.id}`,
      other: `mem_ep_${other.id}`,
      shared,
      own,
    };
    const hold = await call('legal', 'POST', '/v1/legal-holds', { scope: { recordIds: [ids.zh] }, reason: 'MATTER-42' });
    expect(hold.status, hold.text).toBe(201);
    // Processing to show up in the history: a recall that returns cust-7's records.
    await strong();
    const recall = await call('agent', 'POST', '/v1/recall', {
      query: 'Zephyrine spare house key frog',
      purpose: 'support',
      budgetTokens: 4000,
    });
    expect(recall.status, recall.text).toBe(200);
  });

  it('produces the export through the workflow and reports it with counts', async () => {
    requestId = await requestFor('cust-7');
    const done = await settle(requestId);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.files).toEqual(['export.json', 'export.pdf', 'manifest']);
    expect(done.subjectPseudonym).toMatch(/^psn_[0-9a-f]{32}$/);
    expect(done.counts).toMatchObject({ restricted: 1, withheld: 1 });
    expect(JSON.stringify(done)).not.toContain('cust-7');
  });

  it('keeps the subject id and any content out of the workflow history (input: tenant, request id, pseudonym)', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const handle = new Client({ connection }).workflow.getHandle(`subject-access-acme-${requestId}`);
      // Payloads come base64-encoded: decode them, as anyone with access to Temporal could.
      const raw = JSON.stringify(await handle.fetchHistory());
      const payloads = [...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((m) => Buffer.from(m[1], 'base64').toString('utf8'));
      const history = `${raw}\n${payloads.join('\n')}`;
      expect(history).toContain(`"subjectPseudonym":"psn_`);
      expect(history).toContain(`"jsonSha256"`);
      for (const secret of ['cust-7', 'Zephyrine', '张伟', Buffer.from('cust-7').toString('base64')]) expect(history).not.toContain(secret);
      const described = await handle.describe();
      expect(JSON.stringify(described.typedSearchAttributes)).not.toContain('cust-7');
    } finally {
      await connection.close();
    }
  });

  it('exports every record of the subject whole, Chinese included, restricted and held ones marked, and no other subject', async () => {
    const response = await call('dpo', 'GET', `/v1/subject-access/${requestId}/export.json`);
    expect(response.status, response.text).toBe(200);
    expect(response.contentType).toContain('application/json');
    exportJson = response.bytes;
    const x = SubjectExport.parse(response.body);
    expect(x.formatVersion).toBe(1);
    expect(x.subject).toBe('cust-7');
    const byId = new Map(x.records.map((r) => [r.id, r]));
    expect(byId.get(ids.en)!.content.text).toBe(secretEn);
    expect(byId.get(ids.zh)!.content.text).toBe(secretZh);
    expect(byId.get(ids.own)!.content.text).toContain('张伟');
    expect(byId.get(ids.own)!.provenance.parentIds.sort()).toEqual([ids.en, ids.zh].sort());
    expect(byId.get(ids.en)!.derivedRecordIds).toEqual(expect.arrayContaining([ids.own, ids.shared]));
    expect(byId.get(ids.restricted)!.marks.restricted).toBe(true);
    expect(byId.get(ids.zh)!.marks.legalHolds).toHaveLength(1);
    expect(byId.get(ids.en)!.purposes).toEqual(['support']);
    expect(byId.get(ids.en)!.retention.class).toBe('standard');
    // Where the data came from: the subject's events, with their source and the record holding their content.
    expect(x.events.map((e) => e.recordId).sort()).toEqual([ids.en, ids.zh, ids.restricted].sort());
    expect(x.events[0].source.system).toBe('crm');
    // The record shared with cust-8: listed by id with the reason, no content.
    expect(byId.has(ids.shared)).toBe(false);
    expect(x.withheld).toEqual([
      expect.objectContaining({ id: ids.shared, reason: 'mixed_subjects', fromRecordIds: [ids.en], otherSources: 1 }),
    ]);
    const text = response.text;
    for (const leak of ['Bartholomew', 'cust-8', ids.other, 'both asked about']) expect(text).not.toContain(leak);
    // The processing history: the recall that read cust-7's records, the writes, this request.
    expect(x.processing.some((p) => p.operation === 'read' && p.recordIds.includes(ids.en))).toBe(true);
    expect(x.processing.some((p) => p.operations.includes(`subject-access/${requestId}`))).toBe(true);
    for (const p of x.processing) expect(p.recordIds).not.toContain(ids.other);
  });

  it('renders a readable PDF in which the Chinese text is set in the embedded CJK font', async () => {
    const response = await call('dpo', 'GET', `/v1/subject-access/${requestId}/export.pdf`);
    expect(response.status).toBe(200);
    expect(response.contentType).toBe('application/pdf');
    exportPdf = response.bytes;
    expect(exportPdf.subarray(0, 8).toString()).toBe('%PDF-1.7');
    // The CJK font is embedded, so the text reads back as written (through its ToUnicode map), Chinese included.
    const text = (await readPdf(exportPdf)).pages.join('\n');
    expect(text.replace(/\s+/g, '')).toContain('张伟的护照');
    expect(text).toContain('Zephyrine Quillfeather');
    expect(text).not.toContain('Bartholomew');
    expect(text).not.toContain('?');
    expect(exportPdf.toString('latin1')).toMatch(/\/FontName \/[A-Z]{6}\+NotoSansHans-Regular/);
  });

  it('signs a manifest with the sha256 of both files, which verifies against the JWKS and with elma verify-certificate', async () => {
    const response = await call('dpo', 'GET', `/v1/subject-access/${requestId}/manifest`);
    expect(response.status, response.text).toBe(200);
    manifest = response.body;
    expect(manifest.certificate.type).toBe('elma.subject-access-manifest');
    expect(manifest.certificate.files.json.sha256).toBe(sha256(exportJson));
    expect(manifest.certificate.files.pdf.sha256).toBe(sha256(exportPdf));
    expect(JSON.stringify(manifest)).not.toContain('cust-7');
    const jwks = (await fetch(`${t.url}/.well-known/elma-keys`).then((r) => r.json())) as Json;
    expect(verifySignedDocument(manifest, jwks)).toMatchObject({ ok: true, type: 'elma.subject-access-manifest' });
    const tampered = structuredClone(manifest);
    tampered.certificate.files.json.sha256 = '0'.repeat(64);
    expect(verifySignedDocument(tampered, jwks)).toEqual({ ok: false, reason: 'signature does not match' });

    // Outside the data folder: the erasure below byte-scans that folder for the subject's content.
    const folder = mkdtempSync(join(tmpdir(), 'elma-sar-'));
    try {
      const files = { manifest: join(folder, 'm.json'), json: join(folder, 'x.json'), pdf: join(folder, 'x.pdf') };
      writeFileSync(files.manifest, JSON.stringify(manifest));
      writeFileSync(files.json, exportJson);
      writeFileSync(files.pdf, exportPdf);
      const out: string[] = [];
      const io = { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => out.push(s) } };
      const jwksUrl = `${t.url}/.well-known/elma-keys`;
      expect(await verifyCertificateCommand([files.manifest, '--jwks', jwksUrl, '--file', files.json, '--file', files.pdf], io)).toBe(0);
      expect(out.join('')).toContain(`manifest OK: subject access ${requestId}`);
      writeFileSync(files.json, Buffer.concat([exportJson, Buffer.from(' ')]));
      expect(await verifyCertificateCommand([files.manifest, '--jwks', jwksUrl, '--file', files.json], io)).toBe(1);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('writes audit entries for the request, the production and each download, with no content', async () => {
    const entries = await auditOf(`subject-access/${requestId}`);
    const rules = entries.map((e) => e.decision.rule);
    expect(rules).toEqual(expect.arrayContaining(['subject-access:requested', 'subject-access:produced', 'subject-access:downloaded']));
    expect(entries.filter((e) => e.decision.rule === 'subject-access:downloaded').map((e) => e.resourceIds[1])).toEqual(
      expect.arrayContaining(['export.json', 'export.pdf', 'manifest']),
    );
    const text = JSON.stringify(entries);
    for (const content of ['Zephyrine', '张伟', 'cust-7']) expect(text).not.toContain(content);
  });

  it("exports the other subject of the shared record with only that subject's part", async () => {
    const other = await requestFor('cust-8', 'compliance');
    expect((await settle(other, 'compliance')).status).toBe('completed');
    const response = await call('compliance', 'GET', `/v1/subject-access/${other}/export.json`);
    const x = SubjectExport.parse(response.body);
    expect(x.records.map((r) => r.id)).toEqual([ids.other]);
    expect(x.withheld.map((w) => [w.id, w.fromRecordIds])).toEqual([[ids.shared, [ids.other]]]);
    for (const leak of ['Zephyrine', '张伟', 'cust-7', ids.en, ids.zh]) expect(response.text).not.toContain(leak);
  });

  describe('attackers', () => {
    it('answers another tenant, an unknown id and a caller without the role alike: 404 problem+json', async () => {
      const answers = [
        await call('otherTenantDpo', 'GET', `/v1/subject-access/${requestId}`),
        await call('otherTenantDpo', 'GET', `/v1/subject-access/${requestId}/export.json`),
        await call('dpo', 'GET', '/v1/subject-access/sar_00000000-0000-0000-0000-000000000000'),
        await call('agent', 'GET', `/v1/subject-access/${requestId}`),
        await call('cust8', 'GET', `/v1/subject-access/${requestId}/export.pdf`),
        await call('dpo', 'GET', '/v1/subject-access/not-an-id'),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(404);
        expect(answer.contentType).toContain('application/problem+json');
        expect(answer.body.code).toBe('SUBJECT_ACCESS.NOT_FOUND');
        expect(answer.text).not.toContain('cust-7');
      }
      // Identical but for the id named and the request's own id.
      const strip = (body: Json) => ({
        ...body,
        detail: body.detail.replace(/sar_[\w-]+|not-an-id/, 'ID'),
        instance: undefined,
        requestId: undefined,
      });
      expect(strip(answers[0].body)).toEqual(strip(answers[2].body));
      expect(strip(answers[3].body)).toEqual(strip(answers[2].body));
    });

    it('refuses a caller without dpo or compliance, and a data subject while self-service is off', async () => {
      for (const [who, body] of [
        ['agent', { subject: 'cust-7' }],
        ['cust7', {}],
        ['cust7', { subject: 'cust-7' }],
      ] as const) {
        const response = await call(who, 'POST', '/v1/subject-access', body);
        expect(response.status, response.text).toBe(403);
        expect(response.body.code).toBe('AUTH.FORBIDDEN');
      }
      for (const body of [{ subject: '', extra: 1 }, {}]) {
        const invalid = await call('dpo', 'POST', '/v1/subject-access', body);
        expect(invalid.status, JSON.stringify(body)).toBe(422);
        expect(invalid.body.code).toBe('REQUEST.VALIDATION_FAILED');
      }
    });

    it('rejects a forged role: a token signed with another key, or naming a role nobody defined', async () => {
      const forged = await mintToken(
        Buffer.from('x'.repeat(40)),
        { tenant: 'acme', sub: 'mallory', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' },
        { issuer: t.elma.config.auth.issuer, audience: t.elma.config.auth.audience, ttlSeconds: 600 },
      );
      const response = await callApi(t.url, forged, 'POST', '/v1/subject-access', { subject: 'cust-7' });
      expect(response.status).toBe(401);
      const invented = await t.token({ sub: 'mallory', roles: ['superdpo'] });
      expect((await callApi(t.url, invented, 'POST', '/v1/subject-access', { subject: 'cust-7' })).status).toBe(401);
      expect((await callApi(t.url, forged, 'GET', `/v1/subject-access/${requestId}/export.json`)).status).toBe(401);
    });

    it('with self-service on, lets a subject export themself only, and follow only their own request', async () => {
      await changePolicy(t.url, tokens.admin, (policy) => {
        policy.subjectAccess = { selfService: true };
      });
      const denied = await call('cust8', 'POST', '/v1/subject-access', { subject: 'cust-7' });
      expect(denied.status).toBe(403);
      const own = await requestFor(undefined, 'cust7');
      const done = await settle(own, 'cust7');
      expect(done.status).toBe('completed');
      const json = await call('cust7', 'GET', `/v1/subject-access/${own}/export.json`);
      expect(json.status).toBe(200);
      expect(SubjectExport.parse(json.body).records.map((r) => r.id)).toContain(ids.zh);
      // The subject is named by pseudonym, not id, where the request is stored and signed.
      const manifest = await call('cust7', 'GET', `/v1/subject-access/${own}/manifest`);
      expect(manifest.body.certificate.requestedBy).toBe(done.subjectPseudonym);
      for (const path of ['', '/export.json', '/manifest']) {
        const other = await call('cust8', 'GET', `/v1/subject-access/${own}${path}`);
        expect(other.status).toBe(404);
        expect(other.body.code).toBe('SUBJECT_ACCESS.NOT_FOUND');
      }
      // The subject cannot read an export a DPO asked for, either (only its requester and the roles can).
      expect((await call('cust7', 'GET', `/v1/subject-access/${requestId}`)).status).toBe(404);
    });
  });

  it('an erasure of the subject deletes every stored export of them: 410, key shredded, manifest kept', async () => {
    const before = await call('dpo', 'GET', `/v1/subject-access/${requestId}/export.json`);
    expect(before.status).toBe(200);
    // Release the hold so the erasure reaches every record.
    const holds = await call('legal', 'GET', '/v1/legal-holds');
    for (const hold of holds.body.holds ?? holds.body) await call('legal', 'DELETE', `/v1/legal-holds/${hold.id}`);
    const erasure = await call('compliance', 'POST', '/v1/erasures', {
      scope: { type: 'subject', subject: 'cust-7' },
      reason: 'subject_request',
    });
    expect(erasure.status, erasure.text).toBe(202);
    for (let i = 0; i < 600; i++) {
      const progress = await call('compliance', 'GET', `/v1/erasures/${erasure.body.requestId}`);
      if (['completed', 'failed', 'denied', 'verification_failed'].includes(progress.body.status)) {
        expect(progress.body.status, JSON.stringify(progress.body.failure)).toBe('completed');
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const status = await call('dpo', 'GET', `/v1/subject-access/${requestId}`);
    expect(status.body.status).toBe('erased');
    expect(status.body.files).toEqual(['manifest']);
    for (const file of ['export.json', 'export.pdf']) {
      const gone = await call('dpo', 'GET', `/v1/subject-access/${requestId}/${file}`);
      expect(gone.status).toBe(410);
      expect(gone.body.code).toBe('SUBJECT_ACCESS.EXPORT_GONE');
    }
    expect(await t.elma.vault.isShredded('acme', `subject-access:${requestId}`)).toBe(true);
    // The export of the other subject did not hold cust-7's records: it stays.
    const progress = await call('compliance', 'GET', `/v1/subject-access/${requestId}`);
    expect(progress.status).toBe(200);
    expect((await call('dpo', 'GET', `/v1/subject-access/${requestId}/manifest`)).status).toBe(200);
    // No plaintext of the export is left in the data folder (it was sealed; its key is gone).
    expect(filesContaining(t.dataDir, [secretZh, 'Zephyrine Quillfeather'])).toEqual([]);
  });
});

describe('an audit entry never names a data subject who acted', () => {
  /** The export of `subject` as a DPO downloads it. */
  async function exportOf(subject: string): Promise<{ text: string; data: SubjectExport }> {
    const id = await requestFor(subject);
    expect((await settle(id)).status).toBe('completed');
    const file = await call('dpo', 'GET', `/v1/subject-access/${id}/export.json`);
    expect(file.status, file.text).toBe(200);
    return { text: file.text, data: SubjectExport.parse(JSON.parse(file.text)) };
  }

  async function trail(): Promise<string> {
    const audit = await call('auditor', 'GET', '/v1/audit');
    expect(audit.status, audit.text).toBe(200);
    return audit.text;
  }

  /** Erases the subject (a compliance officer's request, no approval needed) and waits until it completed. */
  async function erase(subject: string): Promise<void> {
    const erasure = await call('compliance', 'POST', '/v1/erasures', { scope: { type: 'subject', subject }, reason: 'subject_request' });
    expect(erasure.status, erasure.text).toBe(202);
    for (let i = 0; ; i++) {
      const progress = await call('compliance', 'GET', `/v1/erasures/${erasure.body.requestId}`);
      if (progress.body.status === 'completed') break;
      expect(['failed', 'denied', 'verification_failed'], JSON.stringify(progress.body)).not.toContain(progress.body.status);
      expect(i).toBeLessThan(600);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('a subject who calls with their own token (no built-in role) before any event about them is not named in the trail after their erasure', async () => {
    // Given late-subj recalls before ELMA holds anything on them, and an event about them arrives later
    tokens.late = await t.token({ sub: 'late-subj', roles: [], purposes: ['support'], clearance: 'internal' });
    const early = await call('late', 'POST', '/v1/recall', { query: 'bookcase', purpose: 'support', budgetTokens: 200 });
    expect(early.status, early.text).toBe(200);
    await ingest([chatEvent('late-subj', 'Wilhelmina Tarrow asked about the oak desk')]);
    // When late-subj is erased
    await erase('late-subj');
    // Then no entry names them, and the chain holds
    expect(await trail()).not.toContain('late-subj');
    const verified = await call('auditor', 'POST', '/v1/audit/verify');
    expect([verified.status, verified.body.ok], verified.text).toEqual([200, true]);
  });

  it('a subject reads a record, is erased, and another subject export then names neither them nor their pseudonym; the chain verifies', async () => {
    // Given a record derived from the events of cust-31 and cust-32
    tokens.cust31 = await t.token({ sub: 'cust-31', roles: [], purposes: ['support'], clearance: 'internal' });
    tokens.cust32 = await t.token({ sub: 'cust-32', roles: [], purposes: ['support'], clearance: 'internal' });
    const [one, two] = await ingest([
      chatEvent('cust-31', 'Ottoline Brackwater ordered the walnut bookcase'),
      chatEvent('cust-32', 'Peregrine Ashcombe ordered the same walnut bookcase'),
    ]);
    const sharedId = await deriveMemory(t.url, tokens.agent, 'Ottoline and Peregrine both ordered the walnut bookcase', [one.id, two.id]);
    const ownId = `mem_ep_${one.id}`;
    await strong();
    // When each subject reads with their own token
    expect((await call('cust32', 'GET', `/v1/memories/${sharedId}`)).status).toBe(200);
    expect((await call('cust31', 'GET', `/v1/memories/${ownId}`)).status).toBe(200);

    // Then the trail names cust-32 by their pseudonym only, and cust-31's export describes them, never names them
    const pseudonym = (await t.elma.vault.subjectPseudonyms('acme', ['cust-32'], { create: false })).get('cust-32')!;
    expect(pseudonym).toMatch(/^psn_/);
    const reads = (await trail())
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Json)
      .filter((e) => e.operation === 'read' && (e.resourceIds as string[]).includes(sharedId));
    expect(reads.map((e) => [e.actor, e.actorRoles])).toEqual([[pseudonym, []]]);
    const before = await exportOf('cust-31');
    const described = (id: string) => before.data.processing.filter((p) => p.operation === 'read' && p.recordIds.includes(id));
    expect(described(sharedId).map((p) => p.actor)).toEqual(['another data subject']);
    expect(described(ownId).map((p) => p.actor)).toEqual(['the data subject']);
    for (const name of ['cust-32', pseudonym]) expect(before.text).not.toContain(name);

    // When cust-32 is erased
    await erase('cust-32');

    // Then the pseudonym leads nowhere, a new export of cust-31 names neither, the trail has no id, and the chain holds
    expect(await t.elma.vault.subjectsOfPseudonyms('acme', [pseudonym])).toEqual(new Map());
    const after = await exportOf('cust-31');
    for (const name of ['cust-32', pseudonym]) expect(after.text).not.toContain(name);
    expect(await trail()).not.toContain('cust-32');
    const verified = await call('auditor', 'POST', '/v1/audit/verify');
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.ok).toBe(true);
  });
});

describe('subject-access export expiry', () => {
  let short: TestApp;
  beforeAll(async () => {
    short = await startTestApp({ temporal: {}, env: { ELMA_SUBJECT_ACCESS_TTL: '3s' } });
  }, 120_000);
  afterAll(async () => short?.close());

  it('deletes the export at its expiry through the workflow timer: status expired, files 410', async () => {
    const dpo = await short.token({ sub: 'dpo-1', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' });
    const agent = await short.token();
    expect((await callApi(short.url, agent, 'POST', '/v1/events', { events: [chatEvent('cust-9', '李娜喜欢早上打电话')] })).status).toBe(
      202,
    );
    const created = await callApi(short.url, dpo, 'POST', '/v1/subject-access', { subject: 'cust-9' });
    expect(created.status, created.text).toBe(202);
    const id = created.body.requestId as string;
    let status: Json;
    for (let i = 0; i < 300; i++) {
      status = (await callApi(short.url, dpo, 'GET', `/v1/subject-access/${id}`)).body;
      if (status.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status.status).toBe('completed');
    expect(Date.parse(status.expiresAt) - Date.parse(status.producedAt)).toBe(3_000);
    for (let i = 0; i < 200 && status.status === 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await callApi(short.url, dpo, 'GET', `/v1/subject-access/${id}`)).body;
    }
    expect(status.status).toBe('expired');
    expect((await callApi(short.url, dpo, 'GET', `/v1/subject-access/${id}/export.json`)).status).toBe(410);
    expect(await short.elma.vault.isShredded('acme', `subject-access:${id}`)).toBe(true);
  });
});

/** Files under `dir` whose bytes contain any of `needles` (UTF-8). */
function filesContaining(dir: string, needles: string[]): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path)) walk(join(path, name));
      return;
    }
    const bytes = readFileSync(path);
    if (needles.some((needle) => bytes.includes(Buffer.from(needle, 'utf8')))) found.push(path);
  };
  walk(dir);
  return found;
}
