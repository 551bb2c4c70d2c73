import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig, verifySignedCertificate, transitPolicy } from '@elma/infra';
import { openElma } from '@elma/runtime';
import { startOpenBaoDevServer, type OpenBaoDevServer } from '../../../infra/src/key-vault/transit/dev-server';
import { filesContaining } from '../../../tests/support/elasticsearch-files';
import { callApi, chatEvent, roleTokens, startTestApp, type TestApp } from './testing';

/**
 * ELMA with its tenant keys in a real key-management server (ELMA_KEY_VAULT=transit on OpenBao, with the
 * README's least-privilege policy): ingest, recall, a subject's erasure on Temporal with its certificate, and
 * what a client and an operator see while the server is sealed.
 */
const unavailable = inject('openbaoUnavailable');
const suite = unavailable ? describe.skip : describe;

let kms: OpenBaoDevServer;
let kmsToken: string;
let t: TestApp;
/** Everything ELMA logged (API and worker share the process here): checked for the KMS token. */
const logged: string[] = [];
const logger = {
  info: (msg: string, fields?: Record<string, unknown>) => logged.push(JSON.stringify({ msg, ...fields })),
  warn: (msg: string, fields?: Record<string, unknown>) => logged.push(JSON.stringify({ msg, ...fields })),
  error: (msg: string, fields?: Record<string, unknown>) => logged.push(JSON.stringify({ msg, ...fields })),
};
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
const strong = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

async function recallTexts(query: string) {
  await strong();
  const response = await call('agent', 'POST', '/v1/recall', { query, purpose: 'support', budgetTokens: 4000 });
  expect(response.status, response.text).toBe(200);
  return (response.body.items as { text: string }[]).map((i) => i.text);
}

async function kmsKeys(): Promise<string[]> {
  const answer = await kms.api('LIST', 'transit/keys');
  return answer.status === 200 ? (answer.body?.data?.keys ?? []) : [];
}

/** Polls an erasure until it leaves the running states. */
async function settle(id: string) {
  for (let i = 0; i < 900; i++) {
    const progress = await call('compliance', 'GET', `/v1/erasures/${id}`);
    expect(progress.status, progress.text).toBe(200);
    if (['completed', 'failed', 'verification_failed', 'denied', 'approval_timed_out'].includes(progress.body.status)) return progress.body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`erasure ${id} did not settle`);
}

suite('ELMA with its tenant keys in OpenBao (transit)', () => {
  const secretEn = 'Ottoline Marchbanks hides the boathouse key inside the brass diving helmet';
  const secretZh = '李娜把保险柜的钥匙藏在阳台的第二个花盆里';
  const bystander = 'Cornelius Abernathy asked for the brass diving helmet catalogue';

  beforeAll(async () => {
    kms = await startOpenBaoDevServer();
    expect((await kms.api('PUT', 'sys/policies/acl/elma-kms', { policy: transitPolicy() })).status).toBeLessThan(300);
    kmsToken = (await kms.api('POST', 'auth/token/create', { policies: ['elma-kms'], ttl: '2h' })).body!.auth!.client_token;
    t = await startTestApp({
      temporal: {},
      logger,
      env: { ELMA_KEY_VAULT: 'transit', ELMA_KMS_ADDR: kms.address, ELMA_KMS_TOKEN: kmsToken, ELMA_KMS_TIMEOUT_MS: '2000' },
    });
    Object.assign(tokens, await roleTokens(t, ['agent', 'compliance', 'auditor']));
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await kms?.stop();
  });

  it('ingests and recalls with the tenant key in the KMS; the data folder holds no SQLite key vault', async () => {
    const health = (await fetch(`${t.url}/health`).then((r) => r.json())) as { engines: Record<string, unknown> };
    expect(health.engines.keyVault).toEqual({ engine: 'transit', up: true });

    const ingest = await call('agent', 'POST', '/v1/events', {
      events: [chatEvent('cust-7', secretEn), chatEvent('cust-7', secretZh), chatEvent('cust-8', bystander)],
    });
    expect(ingest.status, ingest.text).toBe(202);

    expect((await recallTexts('Ottoline boathouse key brass diving helmet')).join('\n')).toContain('Ottoline');
    expect((await recallTexts('李娜 保险柜 钥匙 花盆')).join('\n')).toContain('李娜');
    expect(existsSync(join(t.dataDir, 'kms-keys.db'))).toBe(true);
    expect(existsSync(join(t.dataDir, 'keys.db'))).toBe(false);
    const vault = t.elma.vault as unknown as { keyNameOf(tenant: string): string };
    expect((await kmsKeys()).sort()).toEqual([vault.keyNameOf('acme'), `${vault.keyNameOf('acme')}-mac`].sort());
    for (const name of await kmsKeys()) for (const word of ['acme', 'cust-7', 'cust-8']) expect(name).not.toContain(word);
  });

  it('refuses to open the data folder with the SQLite vault, whose file would hold none of its keys', async () => {
    const config = loadConfig({ ELMA_DATA_DIR: t.dataDir, ELMA_EMBEDDER: 'hashing', ELMA_KEY_VAULT: 'sqlite' });
    await expect(openElma(config, { logger })).rejects.toThrow(/keys are in the transit key vault.*ELMA_KEY_VAULT=transit/);
    expect(existsSync(join(t.dataDir, 'keys.db'))).toBe(false);
  });

  it('refuses to open a folder whose keys are in the SQLite vault with ELMA_KEY_VAULT=transit, and opens one that has none', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'elma-kms-switch-'));
    try {
      const sqlite = await openElma(loadConfig({ ELMA_DATA_DIR: dataDir, ELMA_EMBEDDER: 'hashing' }), { logger });
      await sqlite.vault.isShredded('acme', 'probe');
      await sqlite.close();
      const transit = {
        ELMA_DATA_DIR: dataDir,
        ELMA_EMBEDDER: 'hashing',
        ELMA_KEY_VAULT: 'transit',
        ELMA_KMS_ADDR: kms.address,
        ELMA_KMS_TOKEN: kmsToken,
      };
      // keys.db without tenant keys (nothing was ever written): the transit vault may take over.
      const empty = await openElma(loadConfig(transit), { logger });
      await empty.close();
      rmSync(join(dataDir, 'kms-keys.db'));
      const again = await openElma(loadConfig({ ELMA_DATA_DIR: dataDir, ELMA_EMBEDDER: 'hashing' }), { logger });
      await again.vault.dataKeys('acme', ['m1'], { create: true });
      await again.close();
      await expect(openElma(loadConfig(transit), { logger })).rejects.toThrow(/keys are in the sqlite key vault.*ELMA_KEY_VAULT=sqlite/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('erases a subject on Temporal: a certificate that verifies, nothing left to recall or on disk, the bystander kept', async () => {
    const request = await call('compliance', 'POST', '/v1/erasures', {
      scope: { type: 'subject', subject: 'cust-7' },
      reason: 'subject_request',
    });
    expect(request.status, request.text).toBe(202);
    const progress = await settle(request.body.requestId);
    expect(progress.status, JSON.stringify(progress.failure)).toBe('completed');

    const certificate = await call('auditor', 'GET', `/v1/erasures/${request.body.requestId}/certificate`);
    expect(certificate.status, certificate.text).toBe(200);
    const keys = await fetch(`${t.url}/.well-known/elma-keys`).then((r) => r.json());
    expect(verifySignedCertificate(certificate.body, keys)).toMatchObject({ ok: true });
    const c = certificate.body.certificate;
    expect(c.verification.passed).toBe(true);
    expect(c.verification.decrypt.failed).toBe(0);
    expect(c.verification.byteScan.paths).toEqual(expect.arrayContaining(['events.db', 'kms-keys.db']));
    expect(certificate.text).not.toContain('cust-7');

    expect((await recallTexts('Ottoline boathouse key brass diving helmet')).join('\n')).not.toMatch(/Ottoline|李娜/);
    expect((await recallTexts('Cornelius brass diving helmet catalogue')).join('\n')).toContain('Cornelius');
    await t.elma.index.flush();
    for (const needle of [secretEn, secretZh, 'cust-7']) expect(filesContaining(t.dataDir, Buffer.from(needle))).toEqual([]);
  });

  it('while the KMS is sealed: 503 KEY_VAULT.KMS_UNAVAILABLE problem+json and /health down; served again once unsealed', async () => {
    await kms.seal();
    try {
      const refused = await call('agent', 'POST', '/v1/events', chatEvent('cust-12', 'A note written while the KMS is sealed'));
      expect(refused.status, refused.text).toBe(503);
      expect(refused.contentType).toContain('application/problem+json');
      expect(refused.body).toMatchObject({ code: 'KEY_VAULT.KMS_UNAVAILABLE', status: 503 });
      expect(refused.body.detail).toMatch(/sealed/);
      expect(refused.text).not.toContain(kmsToken);
      expect(refused.text).not.toMatch(/\n\s+at |stack/);

      const health = await fetch(`${t.url}/health`);
      expect(health.status).toBe(503);
      expect(((await health.json()) as { engines: Record<string, unknown> }).engines.keyVault).toEqual({
        engine: 'transit',
        up: false,
        detail: { reason: 'sealed' },
      });
    } finally {
      await kms.unseal();
    }

    const accepted = await call('agent', 'POST', '/v1/events', chatEvent('cust-12', 'A note written once the KMS is unsealed'));
    expect(accepted.status, accepted.text).toBe(202);
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
    // The refused write stored nothing; the one after it is found.
    const found = (await recallTexts('a note written while or once the KMS is sealed unsealed')).join('\n');
    expect(found).toContain('once the KMS is unsealed');
    expect(found).not.toContain('while the KMS is sealed');
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.filter((line) => line.includes(kmsToken))).toEqual([]);
  });

  it('an erasure is refused with 503 while the KMS is sealed, and one under way when it is sealed still completes', async () => {
    const ingest = await call('agent', 'POST', '/v1/events', {
      events: [chatEvent('cust-21', 'Wilhelmina keeps the cellar ledger in the red tin')],
    });
    expect(ingest.status, ingest.text).toBe(202);
    await strong();

    await kms.seal();
    try {
      const refused = await call('compliance', 'POST', '/v1/erasures', {
        scope: { type: 'subject', subject: 'cust-21' },
        reason: 'subject_request',
      });
      expect(refused.status, refused.text).toBe(503);
      expect(refused.body.code).toBe('KEY_VAULT.KMS_UNAVAILABLE');
    } finally {
      await kms.unseal();
    }

    const request = await call('compliance', 'POST', '/v1/erasures', {
      scope: { type: 'subject', subject: 'cust-21' },
      reason: 'subject_request',
    });
    expect(request.status, request.text).toBe(202);
    // Sealed while it runs: a step that needs the KMS then retries KEY_VAULT.KMS_UNAVAILABLE (shredding needs none).
    await kms.seal();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await kms.unseal();
    const done = await settle(request.body.requestId);
    expect(done.status, JSON.stringify(done.failure)).toBe('completed');
    console.info(
      `[kms e2e] erasure across a sealed KMS: attempts per step ${done.steps.map((s: { step: string; attempts: number }) => `${s.step}=${s.attempts}`).join(' ')}`,
    );
    expect((await recallTexts('Wilhelmina cellar ledger red tin')).join('\n')).not.toContain('Wilhelmina');
  });
});

if (unavailable) describe.skip(`ELMA on OpenBao (not available: ${unavailable.split('\n')[0]})`, () => it('skipped', () => {}));
