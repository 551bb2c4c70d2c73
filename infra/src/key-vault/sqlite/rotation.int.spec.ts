import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FORMAT_VERSIONS, type SignedCertificate } from '@elma/domain';
import { makeCertificate } from '@elma/domain/testing';
import { deriveTenantKey, sealJson, wrapKey } from '@elma/shared';
import { CertificateSigner, verifySignedCertificate } from '../../certificate/signing';
import { masterKeyIdOf, SqliteKeyVault } from './sqlite-key-vault';

function fileHas(path: string, bytes: Uint8Array): boolean {
  return [path, `${path}-wal`].some((p) => existsSync(p) && readFileSync(p).includes(Buffer.from(bytes)));
}

const ids = (n: number, prefix = 'm') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('sqlite key vault rotation', () => {
  let dir: string;
  let path: string;
  let master: Buffer;
  const open: SqliteKeyVault[] = [];
  const vaultOf = (options: Partial<ConstructorParameters<typeof SqliteKeyVault>[0]> = {}) => {
    const vault = new SqliteKeyVault({ path, masterKey: master, ...options });
    open.push(vault);
    return vault;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'elma-key-rotation-'));
    path = join(dir, 'keys.db');
    master = randomBytes(32);
  });

  afterEach(async () => {
    for (const vault of open.splice(0)) await vault.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a tenant key rotation re-wraps data keys and pseudonyms in batches while another process keeps reading and writing', async () => {
    const rotator = vaultOf();
    const other = vaultOf({ cacheSize: 10 });
    const before = await other.dataKeys('t1', ids(120), { create: true });
    const subjects = await other.subjectPseudonyms('t1', ['alice', '张三'], { create: true });
    const db = new Database(path, { readonly: true });
    const oldTenantKey = db.prepare("SELECT wrapped FROM tenant_keys WHERE tenant = 't1'").pluck().get() as Buffer;

    const started = await rotator.beginTenantRotation('t1');
    expect(started).toMatchObject({ current: 2, retiring: [1], remaining: 122 });
    // Mid-rotation: the other process writes a new key (under v2) and reads old ones (under v1).
    await rotator.rewrapTenant('t1', 50);
    const fresh = await other.dataKeys('t1', ['new1'], { create: true });
    expect(await other.dataKeys('t1', ids(120), { create: false })).toEqual(before);
    expect(await other.subjectPseudonyms('t1', ['alice', '张三'], { create: true })).toEqual(subjects);
    let batches = 1;
    for (;;) {
      batches++;
      const { status } = await rotator.rewrapTenant('t1', 50);
      if (status.retiring.length === 0) break;
    }

    expect(batches).toBeGreaterThanOrEqual(3);
    expect(await rotator.tenantKeyStatus('t1')).toEqual({ tenant: 't1', current: 2, retiring: [], remaining: 0 });
    expect(db.prepare("SELECT DISTINCT key_version FROM data_keys WHERE tenant = 't1'").pluck().all()).toEqual([2]);
    db.close();
    // Same data keys (nothing re-encrypted), pseudonyms found and reversed, in a process that cached nothing.
    const reader = vaultOf();
    expect(await reader.dataKeys('t1', ids(120), { create: false })).toEqual(before);
    expect(await reader.dataKeys('t1', ['new1'], { create: false })).toEqual(fresh);
    expect(await reader.subjectPseudonyms('t1', ['alice', '张三'], { create: false })).toEqual(subjects);
    expect(await reader.subjectsOfPseudonyms('t1', [...subjects.values()])).toEqual(new Map([...subjects].map(([s, p]) => [p, s])));
    // The retired tenant key is gone from the file, and the rotation is on record.
    expect(fileHas(path, oldTenantKey)).toBe(false);
    expect((await reader.rotations())[0]).toMatchObject({ kind: 'tenant', tenant: 't1', target: 'v2', state: 'done', rewrapped: 122 });
    // Forgetting and shredding still work under the new key.
    await reader.forgetSubject('t1', 'alice');
    expect(await reader.subjectPseudonyms('t1', ['alice'], { create: false })).toEqual(new Map());
    await reader.shred('t1', ['m1']);
    await expect(other.dataKeys('t1', ['m1'], { create: false })).rejects.toMatchObject({ code: 'KEY_VAULT.KEY_SHREDDED' });
  });

  it('a second rotation request during one resumes it instead of stacking versions, and a destroyed tenant cannot rotate', async () => {
    const vault = vaultOf();
    await vault.dataKeys('t1', ids(10), { create: true });
    await vault.beginTenantRotation('t1');
    expect(await vault.beginTenantRotation('t1')).toMatchObject({ current: 2, retiring: [1] });
    await vault.destroyTenant('t2');
    await expect(vault.beginTenantRotation('t2')).rejects.toMatchObject({ code: 'KEY_VAULT.TENANT_DESTROYED' });
  });

  it('a master key rotation needs the old key beside the new one, re-wraps tenant keys only, and retires the old key', async () => {
    const first = vaultOf();
    const keys = await first.dataKeys('t1', ids(5), { create: true });
    await first.dataKeys('t2', ['x'], { create: true });
    const pseudonyms = await first.subjectPseudonyms('t1', ['alice'], { create: true });
    const root = first.derivationRoot();
    const signingKid = first.signingKeyring().active.kid;
    const wrappedDataKeys = new Database(path, { readonly: true })
      .prepare('SELECT wrapped FROM data_keys ORDER BY record_id')
      .pluck()
      .all();
    await first.close();

    const next = randomBytes(32);
    // The new key alone does not open a file whose keys the old one wraps: refused at open, naming the missing key.
    expect(() => vaultOf({ masterKey: next })).toThrow(expect.objectContaining({ code: 'KEY_VAULT.MASTER_KEY_MISSING' }));
    const rotating = vaultOf({ masterKey: next, previousMasterKeys: [master] });
    const { status } = await rotating.rewrapUnderCurrentMaster(1);
    expect(status.remaining).toBeGreaterThan(0);
    let result;
    do result = await rotating.rewrapUnderCurrentMaster(1);
    while (result.status.remaining > 0);
    expect(result.retired).toEqual([masterKeyIdOf(master)]);
    expect((await rotating.masterKeyStatus()).keys).toEqual([
      { id: masterKeyIdOf(master), state: 'retired', supplied: true },
      { id: masterKeyIdOf(next), state: 'active', supplied: true },
    ]);
    await rotating.close();
    // Asked again, as after a run killed once it had retired the key but before it said so: the same key is named.
    const resumed = vaultOf({ masterKey: next, previousMasterKeys: [master] });
    expect((await resumed.rewrapUnderCurrentMaster(1)).retired).toEqual([masterKeyIdOf(master)]);
    await resumed.close();

    // Now the new key alone opens it; everything derived stays the same; data keys were not touched.
    const after = vaultOf({ masterKey: next });
    expect(await after.dataKeys('t1', ids(5), { create: false })).toEqual(keys);
    expect(await after.subjectPseudonyms('t1', ['alice'], { create: false })).toEqual(pseudonyms);
    expect(after.derivationRoot()).toEqual(root);
    expect(after.signingKeyring().active.kid).toBe(signingKid);
    expect(new Database(path, { readonly: true }).prepare('SELECT wrapped FROM data_keys ORDER BY record_id').pluck().all()).toEqual(
      wrappedDataKeys,
    );
    // The old key alone no longer opens anything.
    expect(() => vaultOf({ masterKey: master })).toThrow(expect.objectContaining({ code: 'KEY_VAULT.MASTER_KEY_RETIRED' }));
  });

  it('a process still running with the old master key only wraps nothing new under it once a rotation retired it', async () => {
    const stale = vaultOf();
    await stale.dataKeys('t1', ['m1'], { create: true });
    const next = randomBytes(32);
    const rotating = vaultOf({ masterKey: next, previousMasterKeys: [master] });
    while ((await rotating.rewrapUnderCurrentMaster(10)).status.remaining > 0);

    // Its cached tenant key still serves its tenant; a new tenant would be wrapped under the retired key: refused.
    expect((await stale.dataKeys('t1', ['m2'], { create: true })).get('m2')).toHaveLength(32);
    await expect(stale.dataKeys('t9', ['m1'], { create: true })).rejects.toMatchObject({ code: 'KEY_VAULT.MASTER_KEY_RETIRED' });
    await expect(stale.rotateSigningKey()).rejects.toMatchObject({ code: 'KEY_VAULT.MASTER_KEY_RETIRED' });
    expect(await vaultOf({ masterKey: next }).dataKeys('t1', ['m1', 'm2'], { create: false })).toHaveProperty('size', 2);
  });

  it('opens a format-1 file: tenants stay derived from the master key that made them, and the format is recorded', async () => {
    const legacy = new Database(path);
    legacy.exec(`CREATE TABLE tenants (tenant TEXT PRIMARY KEY, salt BLOB NOT NULL) WITHOUT ROWID;
      CREATE TABLE data_keys (tenant TEXT NOT NULL, record_id TEXT NOT NULL, wrapped BLOB NOT NULL, PRIMARY KEY (tenant, record_id)) WITHOUT ROWID;
      CREATE TABLE subject_pseudonyms (tenant TEXT NOT NULL, subject_mac BLOB NOT NULL, pseudonym TEXT NOT NULL, subject BLOB NOT NULL,
        PRIMARY KEY (tenant, subject_mac), UNIQUE (tenant, pseudonym)) WITHOUT ROWID;`);
    const salt = randomBytes(32);
    const tenantKey = deriveTenantKey(master, salt, 't1');
    const dataKey = randomBytes(32);
    legacy.prepare('INSERT INTO tenants VALUES (?, ?)').run('t1', salt);
    legacy.prepare('INSERT INTO data_keys VALUES (?, ?, ?)').run('t1', 'm1', wrapKey(tenantKey, dataKey, { tenant: 't1', recordId: 'm1' }));
    const mac = createHmac('sha256', tenantKey).update('elma/subject-pseudonym/v1\u0000').update('bob').digest();
    const sealed = Buffer.from(JSON.stringify(sealJson(tenantKey, 'bob', 'elma/subject/v1\u0000t1\u0000sp_legacy')));
    legacy.prepare('INSERT INTO subject_pseudonyms VALUES (?, ?, ?, ?)').run('t1', mac, 'sp_legacy', sealed);
    legacy.close();

    // The operator already set a new ELMA_MASTER_KEY, with the old one as previous: the old one is found.
    const next = randomBytes(32);
    const vault = vaultOf({ masterKey: next, previousMasterKeys: [master] });
    expect(await vault.dataKeys('t1', ['m1'], { create: false })).toEqual(new Map([['m1', new Uint8Array(dataKey)]]));
    expect(await vault.subjectPseudonyms('t1', ['bob'], { create: false })).toEqual(new Map([['bob', 'sp_legacy']]));
    expect(vault.derivationRoot()).toEqual(new Uint8Array(master));
    // The format-1 signing key (derived from the master key) keeps its id.
    expect(vault.signingKeyring().active.kid).toBe(new CertificateSigner({ masterKey: master }).keyId);
    const db = new Database(path, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(FORMAT_VERSIONS.keyVault);
    db.close();
    // Rotating the master key then moves the derived tenant key under the new one, and the old one can go.
    while ((await vault.rewrapUnderCurrentMaster(10)).status.remaining > 0);
    await vault.close();
    expect(await vaultOf({ masterKey: next }).dataKeys('t1', ['m1'], { create: false })).toEqual(
      new Map([['m1', new Uint8Array(dataKey)]]),
    );
  });

  it('refuses a file of a newer format with a clear message', () => {
    vaultOf();
    const db = new Database(path);
    db.pragma(`user_version = ${FORMAT_VERSIONS.keyVault + 1}`);
    db.close();
    expect(() => new SqliteKeyVault({ path, masterKey: master })).toThrow(
      expect.objectContaining({
        code: 'KEY_VAULT.FORMAT_UNSUPPORTED',
        message: expect.stringMatching(/format 3; this ELMA reads format 2/),
      }),
    );
  });

  it('a signing key rotation signs new certificates with the new key; the JWKS keeps the old one, so old certificates verify and forgeries do not', async () => {
    const vault = vaultOf();
    const other = vaultOf();
    const signer = new CertificateSigner({ keyring: () => vault.signingKeyring() });
    const otherSigner = new CertificateSigner({ keyring: () => other.signingKeyring() });
    const oldKid = signer.keyId;
    const before = signer.sign(certificate(oldKid));
    const oldSeed = vault.signingKeyring().active.seed;

    const { kid, previous } = await vault.rotateSigningKey();

    expect(previous).toBe(oldKid);
    expect(kid).not.toBe(oldKid);
    // Another process sees the rotation on its next call (generation counter).
    expect(otherSigner.keyId).toBe(kid);
    const jwks = otherSigner.jwks();
    expect(jwks.keys.map((k) => k.kid)).toEqual([kid, oldKid]);
    const after = otherSigner.sign(certificate(kid));
    expect(verifySignedCertificate(before, jwks)).toMatchObject({ ok: true, kid: oldKid });
    expect(verifySignedCertificate(after, jwks)).toMatchObject({ ok: true, kid });
    // A certificate still naming the old key cannot be signed any more, and the old private seed is gone from the file.
    expect(() => signer.sign(certificate(oldKid))).toThrow(/names signing key/);
    expect(fileHas(path, Buffer.from(Buffer.from(oldSeed).toString('base64')))).toBe(false);
    // Forgeries: an altered old certificate, and one signed by an outsider's key under the old kid.
    const altered = structuredClone(before) as SignedCertificate;
    altered.certificate.closure.size += 1;
    expect(verifySignedCertificate(altered, jwks)).toMatchObject({ ok: false, reason: 'signature does not match' });
    const outsider = new CertificateSigner({ masterKey: randomBytes(32) });
    const forged = outsider.sign(certificate(outsider.keyId));
    const relabelled = {
      ...forged,
      certificate: { ...forged.certificate, keyId: oldKid },
      signature: { ...forged.signature, kid: oldKid },
    };
    expect(verifySignedCertificate(relabelled, jwks)).toMatchObject({ ok: false });
  });
});

function certificate(keyId: string) {
  return makeCertificate({ keyId, records: 2 });
}
