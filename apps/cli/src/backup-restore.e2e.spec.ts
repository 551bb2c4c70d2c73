import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, scanFiles, verifySignedCertificate } from '@elma/infra';
import { elmaArgs, eraseOverHttp, ingestOverHttp, ownElmaEnv } from '../../../tests/support/elma-process';
import { spawnElmaStart, type StartedElma } from './embedded-env';

/**
 * Back up, erase, restore: nothing comes back. Real `elma start` processes on
 * a folder of their own (own Temporal dev server), driven over HTTP; the
 * backup and the restore are the real CLI commands; the byte scan reads every
 * file of the data folder.
 */
describe('elma backup / elma restore keep erasures erased', () => {
  const root = mkdtempSync(join(tmpdir(), 'elma-backup-e2e-'));
  const dataDir = join(root, 'data');
  const backupDir = join(root, 'backup');
  const ERASED = ['林小姐的护照号码是E12345678，下周续签。', 'Ms Lin renews the Ravensworth lease on 12 March.'];
  const KEPT = 'Mr Okafor prefers the Lagos office for meetings.';
  let env: NodeJS.ProcessEnv;
  let api = '';
  let elma: StartedElma | undefined;
  let agent: Record<string, string>;
  let dpo: Record<string, string>;
  const cli = (...args: string[]) => spawnSync(process.execPath, elmaArgs(...args), { env, encoding: 'utf8', timeout: 120_000 });
  const token = (...args: string[]) => cli('token', '--tenant', 'acme', ...args).stdout.trim();
  const post = async (path: string, body: unknown, headers = agent) =>
    fetch(`${api}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const recall = async (query: string) =>
    (
      (await (await post('/v1/recall', { query, purpose: 'support', consistency: 'strong' })).json()) as {
        items: { id: string; text: string }[];
      }
    ).items;
  const start = async () => {
    elma = await spawnElmaStart(env);
  };
  const stop = async () => {
    await elma?.stop();
    elma = undefined;
  };
  const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
  const needles = () => ERASED.map((text, i) => ({ id: `erased-${i}`, bytes: Buffer.from(text, 'utf8') }));
  const scanDataDir = async () => scanFiles(await listFiles([dataDir]), needles());

  let erasedIds: string[] = [];
  let certificate: unknown;
  let requestId = '';

  beforeAll(async () => {
    let port: number;
    ({ env, port } = await ownElmaEnv(dataDir));
    api = `http://127.0.0.1:${port}`;
    await start();
    const json = { 'content-type': 'application/json' };
    agent = { ...json, authorization: `Bearer ${token()}` };
    dpo = { ...json, authorization: `Bearer ${token('--sub', 'dpo-1', '--roles', 'dpo,agent', '--clearance', 'restricted')}` };
    const events = [...ERASED.map((text) => ({ subject: 'cust-lin', text })), { subject: 'cust-okafor', text: KEPT }];
    for (const [i, { subject, text }] of events.entries()) await ingestOverHttp(api, agent, subject, text, i);
    erasedIds = [...(await recall('护照号码')), ...(await recall('Ravensworth lease'))]
      .filter((item) => ERASED.includes(item.text))
      .map((item) => item.id);
    expect(erasedIds).toHaveLength(2);
  }, 240_000);

  afterAll(async () => {
    await stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('backs up while ELMA runs, then erases the subject through the real workflow', async () => {
    const backup = cli('backup', '--to', backupDir);
    expect(backup.status, backup.stderr).toBe(0);
    const summary = JSON.parse(backup.stdout) as { files: number; ledgerHead: number; secrets: boolean; notCopied: string[] };
    expect(summary.secrets).toBe(false);
    expect(summary.ledgerHead).toBe(0);
    const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8')) as { files: { path: string }[] };
    expect(manifest.files.map((f) => f.path)).toEqual(
      expect.arrayContaining(['events.db', 'keys.db', 'index/meta.db', 'index/tenant-acme.db']),
    );
    expect(manifest.files.map((f) => f.path)).not.toContain('erasure-ledger.db');
    expect(manifest.files.map((f) => f.path)).not.toContain('master.key');
    // The backup holds the subject's content (the index rows): a restore would bring it back without the ledger.
    expect((await scanFiles(await listFiles([backupDir]), needles())).findings.length).toBeGreaterThan(0);

    requestId = await eraseOverHttp(api, dpo, { scope: { type: 'subject', subject: 'cust-lin' }, reason: 'subject_request' });
    certificate = await (await fetch(`${api}/v1/erasures/${requestId}/certificate`, { headers: dpo })).json();
    expect(await recall('护照号码')).toEqual([]);

    // The ledger holds the erasure: ids, the forgotten pseudonym, the deleted stream, the tombstones; no content, no subject id.
    const ledgerPath = join(dataDir, 'erasure-ledger.db');
    const ledger = new Database(ledgerPath, { readonly: true });
    const entries = (ledger.prepare('SELECT entry FROM erasures').all() as { entry: string }[]).map(
      (row) => JSON.parse(row.entry) as Record<string, string[]>,
    );
    ledger.close();
    expect(entries).toHaveLength(1);
    expect(entries[0].recordIds.sort()).toEqual([...erasedIds].sort());
    expect(entries[0].forgottenPseudonyms).toHaveLength(1);
    expect(entries[0].deletedStreams.length).toBeGreaterThan(0);
    expect(entries[0].tombstones.length).toBeGreaterThanOrEqual(2);
    const ledgerBytes = readFileSync(ledgerPath);
    for (const needle of ['cust-lin', ...ERASED]) expect(ledgerBytes.includes(Buffer.from(needle, 'utf8'))).toBe(false);
  }, 180_000);

  it('refuses to restore into the folder while ELMA runs, naming the owner', () => {
    const restore = cli('restore', '--from', backupDir);
    expect(restore.status).toBe(1);
    expect(restore.stderr).toContain(`in use by pid ${elma!.child.pid}`);
  });

  it('refuses a corrupted backup and changes nothing', async () => {
    await stop();
    const corrupted = join(root, 'corrupted');
    cpSync(backupDir, corrupted, { recursive: true });
    const file = join(corrupted, 'index', 'tenant-acme.db');
    const bytes = readFileSync(file);
    bytes[bytes.length - 100] ^= 0xff;
    writeFileSync(file, bytes);
    const before = sha(join(dataDir, 'events.db'));
    const restore = cli('restore', '--from', corrupted);
    expect(restore.status).toBe(1);
    expect(restore.stderr).toContain('index/tenant-acme.db does not match its checksum');
    expect(restore.stderr).toContain('Nothing was changed');
    expect(sha(join(dataDir, 'events.db'))).toBe(before);
    expect((await scanDataDir()).findings).toEqual([]);
  }, 60_000);

  it('restores, and the next start erases again before it serves: HTTP, GraphQL and the bytes show nothing', async () => {
    const restore = cli('restore', '--from', backupDir);
    expect(restore.status, restore.stderr).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ erasuresToReapply: 1 });
    // Restored, not yet started: the subject's content is back in the folder (the test can fail).
    expect((await scanDataDir()).findings.length).toBeGreaterThan(0);

    let output = '';
    elma = await spawnElmaStart({ ...env, ELMA_LOG_LEVEL: 'info' }, { onOutput: (chunk) => (output += chunk) });
    expect(await recall('护照号码')).toEqual([]);
    expect(await recall('Ravensworth lease')).toEqual([]);
    expect((await recall('Lagos office')).map((i) => i.text)).toContain(KEPT);
    for (const id of erasedIds) expect((await fetch(`${api}/v1/memories/${id}`, { headers: agent })).status).toBe(404);
    const graphql = (await (
      await post('/graphql', { query: '{ recall(input: {query: "Ravensworth 护照号码", purpose: "support"}) { items { id text } } }' })
    ).json()) as { data: { recall: { items: { text: string }[] } } };
    expect(graphql.data.recall.items.map((i) => i.text).filter((t) => ERASED.includes(t))).toEqual([]);
    // Ingest of the erased content is refused again (the tombstones came back with the ledger).
    const again = await post('/v1/events', {
      subject: 'cust-lin',
      occurredAt: '2026-11-30T09:30:00Z',
      activity: 'chat.turn',
      content: { text: ERASED[1] },
      source: { system: 'crm', externalId: 'm-again' },
    });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { code: string }).code).toBe('ERASURE.CONTENT_ERASED');
    expect(output).toContain('erasure ledger re-applied to restored data');

    // The certificate issued before the restore still verifies with the keys the restored ELMA serves.
    const jwks = await (await fetch(`${api}/.well-known/elma-keys`)).json();
    expect(verifySignedCertificate(certificate, jwks)).toMatchObject({ ok: true });
    writeFileSync(join(root, 'certificate.json'), JSON.stringify(certificate));
    const verified = cli('verify-certificate', join(root, 'certificate.json'), '--jwks', `${api}/.well-known/elma-keys`);
    expect(verified.status, verified.stderr + verified.stdout).toBe(0);

    await stop();
    const scan = await scanDataDir();
    expect(scan.files).toBeGreaterThan(3);
    expect(scan.findings).toEqual([]);
  }, 240_000);

  it('refuses to start on a damaged ledger, with a clear message, rather than resurrect', () => {
    const db = new Database(join(dataDir, 'erasure-ledger.db'));
    db.prepare(`UPDATE erasures SET entry = replace(entry, '"recordIds":[', '"recordIds":["x",')`).run();
    db.close();
    const started = cli('start');
    expect(started.status).not.toBe(0);
    expect(started.stderr).toContain('erasure ledger');
    expect(started.stderr).toContain('does not match its checksum');
  }, 120_000);
});
