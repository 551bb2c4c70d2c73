import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_TENANT } from '@elma/domain';
import { tenantStreams } from '@elma/application';
import { listFiles, scanFiles, SqliteEventLog, verifySignedOffboardingCertificate } from '@elma/infra';
import { elmaArgs, ownElmaEnv } from '../../../tests/support/elma-process';
import { spawnElmaStart, type StartedElma } from './embedded-env';

/**
 * Back up two tenants, off-board one of them (the real workflow, four eyes), restore the backup: the
 * off-boarded tenant stays gone. Real `elma start` processes (one before the restore, one after), the real
 * `elma backup` / `elma restore`, HTTP only; the byte scan reads every file of the data folder.
 */
describe('elma restore keeps an off-boarded tenant off-boarded', () => {
  const root = mkdtempSync(join(tmpdir(), 'elma-restore-offboard-'));
  const dataDir = join(root, 'data');
  const backupDir = join(root, 'backup');
  const GONE = ['陈女士的银行账号是6222020200112233，请勿外传。', 'Initech keeps the Quillfeather merger memo in vault seven.'];
  const KEPT = ['Globex ships the Marrowgate order on Friday.', '环球公司周五发运马罗盖特订单。'];
  let env: NodeJS.ProcessEnv;
  let api = '';
  let elma: StartedElma | undefined;
  const tokens: Record<'a' | 'b' | 'ops1' | 'ops2', string> = { a: '', b: '', ops1: '', ops2: '' };
  const cli = (...args: string[]) => spawnSync(process.execPath, elmaArgs(...args), { env, encoding: 'utf8', timeout: 120_000 });
  const mint = (...args: string[]) => {
    const minted = cli('token', ...args);
    expect(minted.status, minted.stderr).toBe(0);
    return minted.stdout.trim();
  };
  const call = async (who: keyof typeof tokens, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), authorization: `Bearer ${tokens[who]}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown>, text };
  };
  const ingest = (who: 'a' | 'b', texts: string[], tag: string) =>
    call(who, 'POST', '/v1/events', {
      events: texts.map((text, i) => ({
        subject: `cust-${tag}`,
        occurredAt: `2026-11-2${i}T09:30:00Z`,
        activity: 'chat.turn',
        content: { text },
        source: { system: 'crm', externalId: `${tag}-${i}` },
      })),
    });
  const recall = async (who: 'a' | 'b', query: string) =>
    call(who, 'POST', '/v1/recall', { query, purpose: 'support', consistency: 'strong' });
  const texts = (reply: { body: Record<string, unknown> }) => (reply.body.items as { text: string }[]).map((item) => item.text);
  const needles = () => GONE.map((text, i) => ({ id: `gone-${i}`, bytes: Buffer.from(text, 'utf8') }));
  const scanDataDir = async () => scanFiles(await listFiles([dataDir]), needles());
  const stop = async () => {
    await elma?.stop();
    elma = undefined;
  };

  let certificate: unknown;
  let requestId = '';

  beforeAll(async () => {
    let port: number;
    ({ env, port } = await ownElmaEnv(dataDir));
    api = `http://127.0.0.1:${port}`;
    elma = await spawnElmaStart(env);
    tokens.a = mint('--tenant', 'initech', '--sub', 'agent-a');
    tokens.b = mint('--tenant', 'globex', '--sub', 'agent-b');
    tokens.ops1 = mint('--tenant', PLATFORM_TENANT, '--sub', 'ops-1', '--roles', 'platform-admin');
    tokens.ops2 = mint('--tenant', PLATFORM_TENANT, '--sub', 'ops-2', '--roles', 'platform-admin');
    expect((await ingest('a', GONE, 'chen')).status).toBe(202);
    expect((await ingest('b', KEPT, 'globex')).status).toBe(202);
    expect(texts(await recall('a', 'Quillfeather merger memo'))).toContain(GONE[1]);
    expect(texts(await recall('b', 'Marrowgate order'))).toContain(KEPT[0]);
  }, 240_000);

  afterAll(async () => {
    await stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('backs up both tenants, then off-boards initech through the real workflow (four eyes)', async () => {
    const backup = cli('backup', '--to', backupDir);
    expect(backup.status, backup.stderr).toBe(0);
    // The backup holds initech's texts (its index partition): restored as it is, it would bring the tenant back.
    expect((await scanFiles(await listFiles([backupDir]), needles())).findings.length).toBeGreaterThan(0);

    const asked = await call('ops1', 'POST', '/v1/tenants/initech/offboard', { reason: 'contract_ended' });
    expect(asked.status, asked.text).toBe(202);
    requestId = asked.body.requestId as string;
    const self = await call('ops1', 'POST', `/v1/tenants/initech/offboard/${requestId}/approve`);
    expect(self.status, self.text).toBe(403);
    expect(self.body.code).toBe('OFFBOARD.SELF_APPROVAL');
    const approved = await call('ops2', 'POST', `/v1/tenants/initech/offboard/${requestId}/approve`);
    expect(approved.status, approved.text).toBe(202);
    let status = '';
    for (const deadline = Date.now() + 150_000; status !== 'completed' && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      status = (await call('ops1', 'GET', `/v1/tenants/initech/offboard/${requestId}`)).body.status as string;
      expect(status).not.toBe('failed');
    }
    expect(status).toBe('completed');
    const stored = await call('ops1', 'GET', `/v1/tenants/initech/offboard/${requestId}/certificate`);
    expect(stored.status).toBe(200);
    certificate = stored.body;
    expect((await recall('a', 'Quillfeather')).status).toBe(410);

    // The ledger holds the off-boarding: ids and the certificate's signature, nothing of the tenant's content.
    const ledgerPath = join(dataDir, 'erasure-ledger.db');
    const ledger = new Database(ledgerPath, { readonly: true });
    const entries = (ledger.prepare('SELECT entry FROM erasures').all() as { entry: string }[]).map(
      (row) => JSON.parse(row.entry) as Record<string, unknown>,
    );
    ledger.close();
    const signed = certificate as { signature: { kid: string; value: string }; certificate: { issuedAt: string } };
    expect(entries).toEqual([
      {
        formatVersion: 1,
        kind: 'tenant-offboarding',
        tenant: 'initech',
        requestId,
        completedAt: signed.certificate.issuedAt,
        certificate: { keyId: signed.signature.kid, signature: signed.signature.value },
      },
    ]);
    const ledgerBytes = readFileSync(ledgerPath);
    for (const needle of ['cust-chen', ...GONE]) expect(ledgerBytes.includes(Buffer.from(needle, 'utf8'))).toBe(false);
    await stop();
  }, 240_000);

  it('restores the backup; the next start off-boards initech again before it serves, globex works as before', async () => {
    await stop();
    const restore = cli('restore', '--from', backupDir);
    expect(restore.status, restore.stderr).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ erasuresToReapply: 0, offboardingsToReapply: 1 });
    // Restored, not yet started: initech's content, key and partition are back in the folder (the test can fail).
    expect((await scanDataDir()).findings.length).toBeGreaterThan(0);
    expect(existsSync(join(dataDir, 'index', 'tenant-initech.db'))).toBe(true);

    elma = await spawnElmaStart({ ...env, ELMA_LOG_LEVEL: 'info' });
    expect(elma.output()).toContain('erasure ledger re-applied to restored data');
    // initech's tokens, minted before the backup, are refused for reads and writes, REST and GraphQL.
    for (const reply of [await recall('a', 'Quillfeather merger memo'), await ingest('a', ['A write after the restore.'], 'late')]) {
      expect(reply.status, reply.text).toBe(410);
      expect(reply.body.code).toBe('TENANT.OFFBOARDED');
    }
    const graphql = await call('a', 'POST', '/graphql', {
      query: '{ recall(input: {query: "Quillfeather 银行账号", purpose: "support"}) { items { text } } }',
    });
    expect(graphql.body.data).toBeNull();
    expect((graphql.body.errors as { extensions: { code: string; status: number } }[])[0]!.extensions).toMatchObject({
      code: 'TENANT.OFFBOARDED',
      status: 410,
    });
    // The name stays closed: a new off-boarding of it is refused as one already done.
    const again = await call('ops1', 'POST', '/v1/tenants/initech/offboard', { reason: 'contract_ended' });
    expect(again.status, again.text).toBe(409);
    expect(again.body.code).toBe('OFFBOARD.TENANT_CLOSED');
    // globex keeps its data and works.
    expect(texts(await recall('b', 'Marrowgate order'))).toContain(KEPT[0]);
    expect(texts(await recall('b', '马罗盖特订单'))).toContain(KEPT[1]);
    expect((await ingest('b', ['Globex moves the Marrowgate order to Monday.'], 'globex-2')).status).toBe(202);

    // The certificate issued before the restore still verifies with the keys the restored ELMA serves.
    const jwks = await (await fetch(`${api}/.well-known/elma-keys`)).json();
    expect(verifySignedOffboardingCertificate(certificate, jwks)).toMatchObject({ ok: true });
    writeFileSync(join(root, 'certificate.json'), JSON.stringify(certificate));
    const verified = cli('verify-certificate', join(root, 'certificate.json'), '--jwks', `${api}/.well-known/elma-keys`);
    expect(verified.status, verified.stderr + verified.stdout).toBe(0);

    await stop();
    // The operator's view of the ledger, and a re-application by hand: nothing left to do.
    const status = cli('erasures', 'status');
    expect(status.status, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ entries: 1, offboardings: 1, pendingAfter: null });
    const reapplied = cli('erasures', 'reapply');
    expect(reapplied.status, reapplied.stderr).toBe(0);
    expect(JSON.parse(reapplied.stdout)).toMatchObject({ checked: 1, offboardings: 0, tenantKeysDestroyed: 0, streamsDeleted: 0 });
    expect(existsSync(join(dataDir, 'index', 'tenant-initech.db'))).toBe(false);
    // The restored vault no longer holds the tenant's key; the restored log no longer holds its streams.
    const keys = new Database(join(dataDir, 'keys.db'), { readonly: true });
    const count = (sql: string) => keys.prepare(sql).pluck().get('initech') as number;
    expect([
      count('SELECT count(*) FROM tenants WHERE tenant = ?'),
      count('SELECT count(*) FROM data_keys WHERE tenant = ?'),
      count('SELECT count(*) FROM destroyed_tenants WHERE tenant = ?'),
    ]).toEqual([0, 0, 1]);
    keys.close();
    const log = SqliteEventLog.open(join(dataDir, 'events.db'));
    try {
      expect((await tenantStreams(log, 'initech')).names).toEqual([]);
      expect((await tenantStreams(log, 'globex')).names.length).toBeGreaterThan(0);
    } finally {
      await log.close();
    }
    const scan = await scanDataDir();
    expect(scan.files).toBeGreaterThan(3);
    expect(scan.findings).toEqual([]);
  }, 300_000);
});
