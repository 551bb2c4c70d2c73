import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_TENANT, streams, TENANT_ID_PATTERN, type Principal } from '@elma/domain';
import { mintToken, verifySignedOffboardingCertificate } from '@elma/infra';
import { verifyCertificateCommand } from '../../cli/src/commands/verify-certificate';
import { tenantsCommand } from '../../cli/src/commands/tenants';
import { callApi, chatEvent, e2eIndex, startTestApp, type Json, type TestApp } from './testing';

/*
 * Tenant off-boarding end to end: real HTTP, real Temporal, real SQLite files, two tenants. `acme` leaves;
 * `globex` shares the process and the data folder and must not notice.
 */

let t: TestApp;
let exportDir: string;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

const canaryEn = 'Canary Oberwald-Quintessence 7319: the vault combination is under the mauve teapot';
const canaryZh = '金丝雀测试：欧伯瓦尔德的保险箱密码藏在紫色茶壶下面，编号七三一九';
const globexText = 'Globex keeps shipping manifests for the harbour crane order in the grey binder';

/** Every file under `dir` that contains `needle` (raw bytes). */
function filesContaining(dir: string, needle: string): string[] {
  const bytes = Buffer.from(needle, 'utf8');
  const found: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const stat = statSync(path, { throwIfNoEntry: false });
      if (!stat) continue;
      if (stat.isDirectory()) walk(path);
      else if (stat.isFile() && readFileSync(path).includes(bytes)) found.push(path);
    }
  };
  walk(dir);
  return found;
}

/** Polls the off-boarding until it leaves awaiting/running. */
async function settle(tenant: string, requestId: string): Promise<Json> {
  for (let i = 0; i < 900; i++) {
    const progress = await call('ops1', 'GET', `/v1/tenants/${tenant}/offboard/${requestId}`);
    expect(progress.status, progress.text).toBe(200);
    if (!['running', 'awaiting_approval'].includes(progress.body.status)) return progress.body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`off-boarding ${requestId} did not settle`);
}

/** A problem without the parts that name the request (instance, request id). */
const shape = (body: Json) => ({ status: body.status, code: body.code, title: body.title, detail: body.detail, type: body.type });

beforeAll(async () => {
  exportDir = mkdtempSync(join(tmpdir(), 'elma-offboard-export-'));
  t = await startTestApp({ temporal: {}, env: { ELMA_OFFBOARD_EXPORT_DIR: exportDir } });
  const mint = (claims: Partial<Principal>) => t.token({ purposes: ['support'], clearance: 'restricted', ...claims });
  tokens.acmeAgent = await mint({ tenant: 'acme', sub: 'agent-1', roles: ['agent'] });
  tokens.acmeAdmin = await mint({ tenant: 'acme', sub: 'admin-1', roles: ['admin'] });
  tokens.acmeLegal = await mint({ tenant: 'acme', sub: 'legal-1', roles: ['legal'] });
  tokens.acmeSelfStyled = await mint({ tenant: 'acme', sub: 'admin-1', roles: ['platform-admin', 'admin'] });
  tokens.globexAgent = await mint({ tenant: 'globex', sub: 'agent-g', roles: ['agent'] });
  tokens.ops1 = await mint({ tenant: PLATFORM_TENANT, sub: 'ops-1', roles: ['platform-admin'] });
  tokens.ops2 = await mint({ tenant: PLATFORM_TENANT, sub: 'ops-2', roles: ['platform-admin'] });
  tokens.platformAuditor = await mint({ tenant: PLATFORM_TENANT, sub: 'auditor-p', roles: ['auditor'] });
  const now = new Date();
  tokens.expired = await mintToken(
    t.elma.config.jwtSecret,
    { tenant: PLATFORM_TENANT, sub: 'ops-3', roles: ['platform-admin'], purposes: [], clearance: 'internal' },
    {
      issuer: t.elma.config.auth.issuer,
      audience: t.elma.config.auth.audience,
      now: new Date(now.getTime() - 3 * 3600_000),
      ttlSeconds: 3600,
    },
  );
  tokens.forged = await mintToken(
    new Uint8Array(32).fill(7),
    { tenant: PLATFORM_TENANT, sub: 'ops-3', roles: ['platform-admin'], purposes: [], clearance: 'internal' },
    { issuer: t.elma.config.auth.issuer, audience: t.elma.config.auth.audience },
  );

  const ids: Record<string, string[]> = {};
  for (const [who, events] of [
    [
      'acmeAgent',
      [chatEvent('cust-1', canaryEn), chatEvent('cust-2', canaryZh), chatEvent('cust-1', 'Ordinary note about delivery times')],
    ],
    ['globexAgent', [chatEvent('cust-9', globexText)]],
  ] as const) {
    const response = await call(who, 'POST', '/v1/events', { events });
    expect(response.status, response.text).toBe(202);
    ids[who] = response.body.events.map((e: { id: string }) => e.id);
  }
  const memory = await call('acmeAgent', 'POST', '/v1/memories', {
    kind: 'semantic',
    content: { text: `Summary: ${canaryEn}` },
    sourceEventIds: [ids.acmeAgent[0]],
    purposes: ['support'],
  });
  expect(memory.status, memory.text).toBe(201);
  await strong();
  // The embedded index keeps plaintext in the data folder, so the scan after the off-boarding can fail.
  if (e2eIndex === 'sqlite') expect(filesContaining(t.dataDir, canaryEn).length, 'the canary is on disk before').toBeGreaterThan(0);
}, 180_000);

afterAll(async () => {
  await t?.close();
  rmSync(exportDir, { recursive: true, force: true });
});

describe('tenant off-boarding: who may ask', () => {
  it('refuses a tenant admin, for their own tenant, another one and an unknown one alike (403, same problem)', async () => {
    const answers = await Promise.all(
      ['acme', 'globex', 'nosuch_tenant'].map((tenant) =>
        call('acmeAdmin', 'POST', `/v1/tenants/${tenant}/offboard`, { reason: 'customer_request', export: false }),
      ),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(403);
      expect(answer.contentType).toContain('application/problem+json');
      expect(answer.body.code).toBe('AUTH.FORBIDDEN');
    }
    expect(new Set(answers.map((a) => JSON.stringify(shape(a.body)))).size).toBe(1);
  });

  it('refuses the platform-admin role in a token of an ordinary tenant (its issuer could mint any role)', async () => {
    const own = await call('acmeSelfStyled', 'POST', '/v1/tenants/acme/offboard', { reason: 'customer_request' });
    expect(own.status).toBe(403);
    expect(own.body.code).toBe('AUTH.FORBIDDEN');
    const other = await call('acmeSelfStyled', 'POST', '/v1/tenants/globex/offboard', { reason: 'customer_request' });
    expect(other.status).toBe(403);
  });

  it('refuses expired and forged platform tokens (401)', async () => {
    for (const who of ['expired', 'forged']) {
      const response = await call(who, 'POST', '/v1/tenants/acme/offboard', { reason: 'customer_request' });
      expect(response.status, who).toBe(401);
      expect(response.body.code, who).toMatch(/^AUTH\./);
    }
  });

  it('answers an unknown tenant exactly like a real one', async () => {
    const real = await call('ops1', 'GET', `/v1/tenants/acme/offboard/off_00000000-0000-4000-8000-000000000000`);
    const unknown = await call('ops1', 'GET', `/v1/tenants/nosuch_tenant/offboard/off_00000000-0000-4000-8000-000000000000`);
    expect(real.status).toBe(404);
    expect(shape(unknown.body)).toEqual(shape(real.body));
    // A name no tenant can have: the detail says why, once ("no off-boarding request request" before).
    const misnamed = await call('ops1', 'POST', '/v1/tenants/No-Such-Tenant/offboard', { reason: 'contract_ended' });
    expect(misnamed.status, misnamed.text).toBe(404);
    expect(misnamed.body.code).toBe('OFFBOARD.NOT_FOUND');
    expect(misnamed.body.detail).not.toMatch(/request request/);
    expect(misnamed.body.detail).toContain(TENANT_ID_PATTERN.source);
    const asked = await call('ops1', 'POST', '/v1/tenants/nosuch_tenant/offboard', { reason: 'contract_ended' });
    expect(asked.status, asked.text).toBe(202);
    expect(asked.body.status).toBe('awaiting_approval');
    expect(Object.keys(asked.body).sort()).toEqual(
      [
        'approvedBy',
        'certificateAvailable',
        'currentStep',
        'export',
        'failure',
        'reason',
        'requestId',
        'requestedAt',
        'requestedBy',
        'status',
        'steps',
        'tenant',
      ].sort(),
    );
  });

  it('validates the body with a problem+json and stores nothing', async () => {
    const bad = await call('ops1', 'POST', '/v1/tenants/acme/offboard', { reason: 'because I said so' });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('REQUEST.VALIDATION_FAILED');
    const platform = await call('ops1', 'POST', `/v1/tenants/${PLATFORM_TENANT}/offboard`, { reason: 'contract_ended' });
    expect(platform.status).toBe(409);
    expect(platform.body.code).toBe('OFFBOARD.PLATFORM_TENANT');
  });
});

describe('tenant off-boarding of acme, end to end on Temporal', () => {
  let requestId: string;
  let certificate: Json;

  it('needs a second platform admin (four eyes), and refuses while a legal hold is active', async () => {
    const asked = await call('ops1', 'POST', '/v1/tenants/acme/offboard', { reason: 'contract_ended', export: true });
    expect(asked.status, asked.text).toBe(202);
    requestId = asked.body.requestId;
    expect(requestId).toMatch(/^off_/);
    expect(asked.body).toMatchObject({ tenant: 'acme', status: 'awaiting_approval', requestedBy: 'ops-1', approvedBy: null, export: true });

    const self = await call('ops1', 'POST', `/v1/tenants/acme/offboard/${requestId}/approve`);
    expect(self.status).toBe(403);
    expect(self.body.code).toBe('OFFBOARD.SELF_APPROVAL');
    const tenantAdmin = await call('acmeAdmin', 'POST', `/v1/tenants/acme/offboard/${requestId}/approve`);
    expect(tenantAdmin.status).toBe(403);
    expect(tenantAdmin.body.code).toBe('AUTH.FORBIDDEN');

    const hold = await call('acmeLegal', 'POST', '/v1/legal-holds', { scope: { subjects: ['cust-1'] }, reason: 'matter 2026-17' });
    expect(hold.status, hold.text).toBe(201);
    const held = await call('ops2', 'POST', `/v1/tenants/acme/offboard/${requestId}/approve`);
    expect(held.status).toBe(409);
    expect(held.body.code).toBe('OFFBOARD.BLOCKED_BY_LEGAL_HOLD');
    const again = await call('ops2', 'POST', '/v1/tenants/acme/offboard', { reason: 'contract_ended' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('OFFBOARD.BLOCKED_BY_LEGAL_HOLD');
    const released = await call('acmeLegal', 'DELETE', `/v1/legal-holds/${hold.body.id}`);
    expect(released.status, released.text).toBeLessThan(300);

    // Still pending and acme still works while nobody approved.
    expect((await call('acmeAgent', 'POST', '/v1/recall', { query: 'mauve teapot', purpose: 'support' })).status).toBe(200);
  });

  it('runs every step once approved and ends with a certificate', async () => {
    const approved = await call('ops2', 'POST', `/v1/tenants/acme/offboard/${requestId}/approve`);
    expect(approved.status, approved.text).toBe(202);
    expect(approved.body.approvedBy).toBe('ops-2');
    const done = await settle('acme', requestId);
    expect(done.status, JSON.stringify(done.failure)).toBe('completed');
    expect(done.steps.map((s: { step: string }) => s.step)).toEqual([
      'seal',
      'legal_hold',
      'export',
      'destroy_key',
      'drop_index',
      'delete_streams',
      'verify',
    ]);
    expect(done.certificateAvailable).toBe(true);
    const again = await call('ops2', 'POST', `/v1/tenants/acme/offboard/${requestId}/approve`);
    expect(again.status).toBe(409);
  });

  it('leaves nothing readable: no index partition, no stream, no key, no byte of the canary in the data folder', async () => {
    expect(await t.elma.index.tenants()).not.toContain('acme');
    expect(await t.elma.index.count('acme').catch(() => 0)).toBe(0);
    let left = 0;
    for await (const _ of t.elma.log.readAll({ filter: { streamNamePrefix: ['events-acme-', 'memory-acme-', 'idempotency-acme-'] } }))
      left++;
    for (const name of [streams.audit('acme'), streams.policy('acme'), streams.legalHolds('acme'), streams.tombstones('acme')])
      for await (const _ of t.elma.log.readStream(name)) left++;
    expect(left).toBe(0);
    expect(await t.elma.vault.isShredded('acme', 'anything')).toBe(true);
    expect(filesContaining(t.dataDir, canaryEn)).toEqual([]);
    expect(filesContaining(t.dataDir, canaryZh)).toEqual([]);
    expect(filesContaining(t.dataDir, 'Oberwald-Quintessence')).toEqual([]);
  });

  it('issues a signed certificate that verifies against the JWKS, offline with the CLI, and fails when altered', async () => {
    const response = await call('ops1', 'GET', `/v1/tenants/acme/offboard/${requestId}/certificate`);
    expect(response.status, response.text).toBe(200);
    certificate = response.body;
    expect(certificate.certificate).toMatchObject({
      type: 'elma.tenant-offboarding',
      tenant: 'acme',
      requestId,
      request: { requestedBy: 'ops-1', approvedBy: 'ops-2', reason: 'contract_ended' },
      destroyed: { tenantKeyDestroyed: true },
      verification: { passed: true, indexRecords: 0, streamsLeft: 0, keyDestroyed: true },
      auditAnchor: { tenant: PLATFORM_TENANT },
    });
    expect(certificate.certificate.destroyed.records).toBeGreaterThanOrEqual(4);
    expect(certificate.certificate.destroyed.streamsDeleted).toBeGreaterThan(0);
    expect(certificate.certificate.verification.byteScan.needles).toBeGreaterThanOrEqual(3);
    expect(certificate.certificate.tenantAudit.entries).toBeGreaterThan(0);
    expect(JSON.stringify(certificate)).not.toContain('Oberwald');

    const jwks = (await callApi(t.url, '', 'GET', '/.well-known/elma-keys')).body;
    expect(verifySignedOffboardingCertificate(certificate, jwks).ok).toBe(true);
    const altered = structuredClone(certificate);
    altered.certificate.destroyed.records += 1;
    expect(verifySignedOffboardingCertificate(altered, jwks)).toEqual({ ok: false, reason: 'signature does not match' });

    const dir = mkdtempSync(join(tmpdir(), 'elma-offboard-cert-'));
    try {
      writeFileSync(join(dir, 'certificate.json'), JSON.stringify(certificate));
      writeFileSync(join(dir, 'altered.json'), JSON.stringify(altered));
      writeFileSync(join(dir, 'jwks.json'), JSON.stringify(jwks));
      const out: string[] = [];
      const io = { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => out.push(s) } };
      expect(await verifyCertificateCommand([join(dir, 'certificate.json'), '--jwks', join(dir, 'jwks.json')], io)).toBe(0);
      expect(out.join('')).toContain(`tenant off-boarding ${requestId}, tenant acme`);
      expect(await verifyCertificateCommand([join(dir, 'altered.json'), '--jwks', `${t.url}/.well-known/elma-keys`], io)).toBe(1);

      // The operator's way: `elma tenants status|certificate` over the API, then `elma verify-certificate`.
      const env = { ELMA_TOKEN: tokens.ops2, ELMA_URL: t.url };
      expect(await tenantsCommand(['status', 'acme', requestId, '--wait'], { ...io, env })).toBe(0);
      const file = join(dir, 'from-cli.json');
      expect(await tenantsCommand(['certificate', 'acme', requestId, '--out', file], { ...io, env })).toBe(0);
      expect(await verifyCertificateCommand([file, '--jwks', `${t.url}/.well-known/elma-keys`], io)).toBe(0);
      out.length = 0;
      expect(await tenantsCommand(['status', 'acme', requestId], { ...io, env: { ELMA_TOKEN: tokens.globexAgent, ELMA_URL: t.url } })).toBe(
        1,
      );
      expect(out.join('')).toContain('AUTH.FORBIDDEN');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('wrote the export the certificate names: its sha256, records with provenance, Chinese intact, outside the data folder', () => {
    const exported = certificate.certificate.export;
    expect(exported).not.toBeNull();
    const bytes = readFileSync(join(exportDir, exported.file));
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(exported.sha256);
    expect(bytes.length).toBe(exported.bytes);
    expect(statSync(join(exportDir, exported.file)).mode & 0o777).toBe(0o600);
    const archive = JSON.parse(bytes.toString('utf8'));
    expect(archive).toMatchObject({ type: 'elma.tenant-export', formatVersion: 1, tenant: 'acme', requestId });
    const texts = archive.records.map((r: Json) => r.content.text);
    expect(texts).toContain(canaryEn);
    expect(texts).toContain(canaryZh);
    expect(archive.records.every((r: Json) => r.provenance && r.tenant === 'acme')).toBe(true);
    expect(archive.records.some((r: Json) => r.content.text === globexText)).toBe(false);
    expect(archive.policy).toBeTruthy();
    expect(archive.audit.length).toBe(exported.auditEntries);
    expect(archive.audit.at(-1).hash).toBe(certificate.certificate.tenantAudit.hash);
  });

  it('refuses every request of the tenant’s old tokens with 410 TENANT.OFFBOARDED, and the name cannot be reused', async () => {
    for (const [method, path, body] of [
      ['GET', '/v1/policy', undefined],
      ['POST', '/v1/recall', { query: 'mauve teapot', purpose: 'support' }],
      ['POST', '/v1/events', { events: [chatEvent('cust-1', 'A new event for the closed tenant')] }],
      ['POST', '/v1/memories', { kind: 'semantic', content: { text: 'resurrected' }, purposes: ['support'] }],
    ] as const) {
      const response = await call('acmeAgent', method, path, body);
      expect(response.status, `${method} ${path}`).toBe(410);
      expect(response.contentType).toContain('application/problem+json');
      expect(response.body.code).toBe('TENANT.OFFBOARDED');
    }
    // A token minted afresh for the name (a new customer, an attacker) is refused the same way.
    const fresh = await t.token({ tenant: 'acme', sub: 'newcomer', roles: ['admin'] });
    expect((await callApi(t.url, fresh, 'PUT', '/v1/policy', {})).status).toBe(410);
    expect(await t.elma.index.tenants()).not.toContain('acme');
    const again = await call('ops1', 'POST', '/v1/tenants/acme/offboard', { reason: 'contract_ended' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('OFFBOARD.TENANT_CLOSED');
  });

  it('leaves the other tenant untouched and working', async () => {
    const recall = await call('globexAgent', 'POST', '/v1/recall', { query: 'harbour crane manifests', purpose: 'support' });
    expect(recall.status, recall.text).toBe(200);
    expect(recall.body.items.map((i: { text: string }) => i.text)).toContain(globexText);
    const ingest = await call('globexAgent', 'POST', '/v1/events', {
      events: [chatEvent('cust-9', 'Globex follow-up on the crane order')],
    });
    expect(ingest.status, ingest.text).toBe(202);
    if (e2eIndex === 'sqlite') expect(filesContaining(t.dataDir, globexText).length).toBeGreaterThan(0);
    expect(await t.elma.vault.isShredded('globex', 'anything')).toBe(false);
  });

  it('audits every step in the platform trail, with ids only', async () => {
    const audit = await call('platformAuditor', 'GET', '/v1/audit');
    expect(audit.status, audit.text).toBe(200);
    const entries = audit.text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Json);
    const ours = entries.filter((e) => e.resourceIds.includes(requestId));
    expect(ours.map((e) => e.decision.rule)).toEqual(
      expect.arrayContaining([
        'offboard:request',
        'offboard:four-eyes',
        'offboard:approve',
        ...['seal', 'legal_hold', 'export', 'destroy_key', 'drop_index', 'delete_streams', 'verify'].map((step) => `offboard:${step}`),
        'offboard:certify',
        'offboard:certificate',
      ]),
    );
    // One entry per step: none done twice in effect.
    const stepEntries = ours.filter((e) => e.resourceIds.some((r: string) => r.startsWith('step/')));
    expect(stepEntries.length).toBe(7);
    expect(JSON.stringify(entries)).not.toMatch(/Oberwald|茶壶/);
    expect(certificate.certificate.auditAnchor.hash).toBe(ours.find((e) => e.decision.rule === 'offboard:certify').hash);
  });
});
