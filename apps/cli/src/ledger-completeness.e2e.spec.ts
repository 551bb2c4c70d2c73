import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_TENANT } from '@elma/domain';
import { listFiles, scanFiles } from '@elma/infra';
import { elmaArgs, eraseOverHttp, ingestOverHttp, ownElmaEnv } from '../../../tests/support/elma-process';
import { spawnElmaStart, type StartedElma } from './embedded-env';

/**
 * An erased person never comes back through the erasure ledger: each way of losing ledger entries (deleting,
 * emptying, truncating, editing, an older copy, another file named by ELMA_ERASURE_LEDGER), followed by a restore
 * of a backup taken before the erasure and a start, is refused with a way to recover; the recoveries (the replica,
 * the certificates) erase the subject again. Real `elma` processes, a real backup, real files damaged by hand;
 * each case works on its own copy of the stopped folder.
 */
describe('the erasure ledger proves it is complete', () => {
  const root = mkdtempSync(join(tmpdir(), 'elma-ledger-e2e-'));
  const dataDir = join(root, 'data');
  const backupDir = join(root, 'backup');
  const certificates = join(root, 'certificates');
  const replica = join(root, 'replica', 'erasure-ledger.db');
  const ERASED = 'Mx Quennell keeps the vault combination 4417 in a tea tin.';
  const KEPT = 'Mr Okafor prefers the Lagos office for meetings.';
  /** The off-boarded tenant's one memory. */
  const OFFBOARDED = 'Initech moves the Marrowgate servers to the Oslo hall in May.';
  let env: NodeJS.ProcessEnv;
  let api = '';
  let elma: StartedElma | undefined;
  let olderLedger = '';
  let cases = 0;

  const run = (caseEnv: NodeJS.ProcessEnv, ...args: string[]) =>
    spawnSync(process.execPath, elmaArgs(...args), { env: caseEnv, encoding: 'utf8', timeout: 120_000 });
  /** A copy of the stopped folder (after the erasure) and the environment that points at it, without the replica. */
  const copyOfFolder = () => {
    const dir = join(root, `case-${++cases}`);
    cpSync(dataDir, dir, { recursive: true });
    const caseEnv: NodeJS.ProcessEnv = { ...env, ELMA_DATA_DIR: dir };
    delete caseEnv.ELMA_ERASURE_LEDGER_REPLICA;
    return { dir, ledger: join(dir, 'erasure-ledger.db'), env: caseEnv };
  };
  /** `elma start`: refused when it exits with an error; one that keeps serving until the time-out was not refused. */
  const start = (caseEnv: NodeJS.ProcessEnv) => {
    const started = spawnSync(process.execPath, elmaArgs('start'), { env: caseEnv, encoding: 'utf8', timeout: 60_000 });
    return { ...started, refusedBy: started.status === null || started.status === 0 ? 'nothing' : 'start' };
  };
  const scan = async (dir: string) =>
    scanFiles(await listFiles([dir]), [
      { id: 'erased', bytes: Buffer.from(ERASED, 'utf8') },
      { id: 'offboarded', bytes: Buffer.from(OFFBOARDED, 'utf8') },
    ]);
  /** Restores the backup taken before the erasure, then starts: one of them must refuse, saying how to recover. */
  const restoreThenStart = (caseEnv: NodeJS.ProcessEnv) => {
    const restore = run(caseEnv, 'restore', '--from', backupDir);
    if (restore.status !== 0) return { refusedBy: 'restore', ...restore };
    return start(caseEnv);
  };
  const expectRefusal = (outcome: { stderr: string; refusedBy: string }, reason: RegExp) => {
    expect(outcome.refusedBy, outcome.stderr).not.toBe('nothing');
    expect(outcome.stderr).toMatch(reason);
    expect(outcome.stderr).toContain('elma erasure reapply --certificates DIR --rebind');
  };

  beforeAll(async () => {
    let port: number;
    ({ env, port } = await ownElmaEnv(dataDir));
    env.ELMA_ERASURE_LEDGER_REPLICA = replica;
    api = `http://127.0.0.1:${port}`;
    elma = await spawnElmaStart(env);
    const token = (...args: string[]) => run(env, 'token', '--tenant', 'acme', ...args).stdout.trim();
    const json = { 'content-type': 'application/json' };
    const agent = { ...json, authorization: `Bearer ${token()}` };
    const dpo = { ...json, authorization: `Bearer ${token('--sub', 'dpo-1', '--roles', 'dpo,agent', '--clearance', 'restricted')}` };
    const initech = { ...json, authorization: `Bearer ${run(env, 'token', '--tenant', 'initech', '--sub', 'agent-i').stdout.trim()}` };
    await ingestOverHttp(api, agent, 'cust-quennell', ERASED, 0);
    await ingestOverHttp(api, agent, 'cust-okafor', KEPT, 1);
    await ingestOverHttp(api, initech, 'cust-ines', OFFBOARDED, 2);
    // Written: the backup holds the subject.
    await fetch(`${api}/v1/recall`, {
      method: 'POST',
      headers: agent,
      body: JSON.stringify({ query: 'vault', purpose: 'support', consistency: 'strong' }),
    });
    expect(run(env, 'backup', '--to', backupDir).status).toBe(0);
    olderLedger = join(root, 'older-ledger.db');
    copyFileSync(join(dataDir, 'erasure-ledger.db'), olderLedger);

    const requestId = await eraseOverHttp(api, dpo, { scope: { type: 'subject', subject: 'cust-quennell' }, reason: 'subject_request' });
    mkdirSync(certificates);
    const certificate = await (await fetch(`${api}/v1/erasures/${requestId}/certificate`, { headers: dpo })).json();
    writeFileSync(join(certificates, `${requestId}.json`), JSON.stringify(certificate));

    // And a tenant off-boarded, with two platform admins.
    const ops = (sub: string) => ({
      ...json,
      authorization: `Bearer ${run(env, 'token', '--tenant', PLATFORM_TENANT, '--sub', sub, '--roles', 'platform-admin').stdout.trim()}`,
    });
    const asked = await fetch(`${api}/v1/tenants/initech/offboard`, {
      method: 'POST',
      headers: ops('ops-1'),
      body: JSON.stringify({ reason: 'contract_ended' }),
    });
    expect(asked.status).toBe(202);
    const offboarding = ((await asked.json()) as { requestId: string }).requestId;
    expect(
      (
        await fetch(`${api}/v1/tenants/initech/offboard/${offboarding}/approve`, {
          method: 'POST',
          headers: { authorization: ops('ops-2').authorization },
        })
      ).status,
    ).toBe(202);
    for (let deadline = Date.now() + 150_000, state = ''; state !== 'completed';) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 500));
      state = (
        (await (await fetch(`${api}/v1/tenants/initech/offboard/${offboarding}`, { headers: ops('ops-1') })).json()) as { status: string }
      ).status;
      expect(state).not.toBe('failed');
    }
    const offboardingCertificate = await (
      await fetch(`${api}/v1/tenants/initech/offboard/${offboarding}/certificate`, { headers: ops('ops-1') })
    ).json();
    writeFileSync(join(certificates, `${offboarding}.json`), JSON.stringify(offboardingCertificate));
    await elma.stop();
    elma = undefined;
    // The erasure is done in the folder, and the backup holds what it erased (so each case below can fail).
    expect((await scan(dataDir)).findings).toEqual([]);
    expect((await scan(backupDir)).findings.length).toBeGreaterThan(0);
  }, 300_000);

  afterAll(async () => {
    await elma?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('refuses an emptied ledger (a 0-byte file is not a new ledger)', () => {
    const folder = copyOfFolder();
    writeFileSync(folder.ledger, '');
    const outcome = restoreThenStart(folder.env);
    expect(outcome.refusedBy).toBe('restore');
    expect(outcome.stderr).toContain('the file holds no ledger');
  }, 120_000);

  it('refuses a deleted ledger: the start after it, and a restore on the new one it would have made', () => {
    const folder = copyOfFolder();
    rmSync(folder.ledger);
    expectRefusal(start(folder.env), /another ledger/);
    expectRefusal(restoreThenStart(folder.env), /another ledger/);
  }, 120_000);

  it('refuses a truncated ledger, and one edited without the signing key', () => {
    const truncated = copyOfFolder();
    const db = new Database(truncated.ledger);
    db.prepare('DELETE FROM erasures WHERE seq = (SELECT max(seq) FROM erasures)').run();
    db.close();
    expectRefusal(restoreThenStart(truncated.env), /holds 1 of the 2 entries recorded|signed head/);

    // An insider rewrites an entry and its checksum: the chain and the signed head tell.
    const edited = copyOfFolder();
    const ledger = new Database(edited.ledger);
    const row = ledger.prepare(`SELECT seq, entry FROM erasures WHERE entry LIKE '%"recordIds"%' LIMIT 1`).get() as {
      seq: number;
      entry: string;
    };
    const entry = JSON.parse(row.entry) as { recordIds: string[] };
    const altered = JSON.stringify({ ...entry, recordIds: ['mem_someone_else'] });
    ledger
      .prepare('UPDATE erasures SET entry = ?, sha256 = ? WHERE seq = ?')
      .run(altered, createHash('sha256').update(altered, 'utf8').digest('hex'), row.seq);
    ledger.close();
    const started = start(edited.env);
    expect(started.refusedBy).toBe('start');
    // The data's witness tells first here (its chain); without it, the signed head would (see the ledger's own suite).
    expect(started.stderr).toMatch(/not the ones recorded|signed head/);

    // Its signed head removed, and every entry with it, the folder emptied but for its keys, then the backup restored:
    // the restored data saw the ledger signed, so this is not a ledger from before signed heads.
    const headless = copyOfFolder();
    const stripped = new Database(headless.ledger);
    stripped.exec(`DELETE FROM ledger_meta WHERE key = 'signedHead'; DELETE FROM erasures;`);
    stripped.close();
    for (const name of readdirSync(headless.dir)) {
      if (!['master.key', 'jwt.secret', 'erasure-ledger.db'].includes(name))
        rmSync(join(headless.dir, name), { recursive: true, force: true });
    }
    const outcome = restoreThenStart(headless.env);
    expect(outcome.refusedBy, outcome.stderr).toBe('start');
    expect(outcome.stderr).toContain('its signed head is missing');
  }, 180_000);

  it('refuses an older copy of the ledger, and another file named by ELMA_ERASURE_LEDGER', () => {
    const older = copyOfFolder();
    copyFileSync(olderLedger, older.ledger);
    expectRefusal(restoreThenStart(older.env), /holds 0 of the 2 entries recorded/);

    const elsewhere = copyOfFolder();
    const moved = { ...elsewhere.env, ELMA_ERASURE_LEDGER: join(root, `elsewhere-${cases}.db`) };
    expectRefusal(start(moved), /another ledger/);
  }, 180_000);

  it('heals an emptied ledger from its replica: the restore re-applies the erasure and the subject stays gone', async () => {
    const folder = copyOfFolder();
    writeFileSync(folder.ledger, '');
    const withReplica = { ...folder.env, ELMA_ERASURE_LEDGER_REPLICA: replica };
    const restore = run(withReplica, 'restore', '--from', backupDir);
    expect(restore.status, restore.stderr).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ erasuresToReapply: 1, offboardingsToReapply: 1 });
    expect(existsSync(`${folder.ledger}`)).toBe(true);
    const reapplied = run(withReplica, 'erasure', 'reapply');
    expect(reapplied.status, reapplied.stderr).toBe(0);
    expect((await scan(folder.dir)).findings).toEqual([]);
  }, 180_000);

  it('recovers from the certificates when every copy is lost: refused first, then rebuilt, bound, restored and re-applied', async () => {
    const folder = copyOfFolder();
    rmSync(folder.ledger);
    // The folder about to be replaced witnessed both entries: restoring without a ledger is refused, naming the way back.
    const blind = run(folder.env, 'restore', '--from', backupDir, '--without-ledger');
    expect(blind.status).toBe(1);
    expect(blind.stderr).toContain('witnessed 2 erasure ledger entries');
    expect(blind.stderr).toContain('--certificates DIR --rebind');

    // Certificates that cover less than the data saw are refused too, and bind nothing.
    const partial = join(root, 'one-certificate');
    mkdirSync(partial);
    const [first] = readdirSync(certificates);
    copyFileSync(join(certificates, first!), join(partial, first!));
    const short = run(folder.env, 'erasure', 'reapply', '--certificates', partial, '--rebind');
    expect(short.status).toBe(1);
    expect(short.stderr).toContain('the data witnessed 2 erasure ledger entries and the certificates give 1');

    const rebuilt = run(folder.env, 'erasure', 'reapply', '--certificates', certificates, '--rebind');
    expect(rebuilt.status, rebuilt.stderr).toBe(0);
    expect(JSON.parse(rebuilt.stdout)).toMatchObject({ certificates: { certificates: 2, added: 1, matching: 1, refused: [] } });
    // The rebuilt ledger, vouched for by the folder, is applied whole to the restored data.
    const restore = run(folder.env, 'restore', '--from', backupDir);
    expect(restore.status, restore.stderr).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ erasuresToReapply: 1, offboardingsToReapply: 1 });
    expect((await scan(folder.dir)).findings.length).toBeGreaterThan(0);
    const reapplied = run(folder.env, 'erasure', 'reapply', '--certificates', certificates);
    expect(reapplied.status, reapplied.stderr).toBe(0);
    expect(JSON.parse(reapplied.stdout)).toMatchObject({ certificates: { matching: 2, added: 0 } });
    expect((await scan(folder.dir)).findings).toEqual([]);
  }, 240_000);

  it('after a signing key rotation, refuses a restore whose vault cannot check the ledger, until the key export is given', async () => {
    const folder = copyOfFolder();
    expect(run(folder.env, 'keys', 'rotate', '--signing').status).toBe(0);
    // The head signed again with the new key (a rebind does it at once; the next erasure would as well).
    expect(run(folder.env, 'erasure', 'reapply', '--certificates', certificates, '--rebind').status).toBe(0);
    const refused = run(folder.env, 'restore', '--from', backupDir);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("which the backup's key vault does not hold");
    const keys = join(root, `keys-${cases}.json`);
    expect(run(folder.env, 'keys', 'export', '--out', keys).status).toBe(0);
    const withKeys = { ...folder.env, ELMA_CERTIFICATE_KEYS: keys };
    const restore = run(withKeys, 'restore', '--from', backupDir);
    expect(restore.status, restore.stderr).toBe(0);
    const reapplied = run(withKeys, 'erasure', 'reapply');
    expect(reapplied.status, reapplied.stderr).toBe(0);
    expect((await scan(folder.dir)).findings).toEqual([]);
  }, 240_000);
});
