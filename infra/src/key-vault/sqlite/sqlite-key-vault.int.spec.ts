import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keyRotationContract, keyVaultContract } from '../contract';
import { SqliteKeyVault } from './sqlite-key-vault';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'elma-key-vault-'));
}

keyVaultContract('sqlite', async () => {
  const dir = tempDir();
  const vault = new SqliteKeyVault({ path: join(dir, 'keys.db'), masterKey: randomBytes(32) });
  return {
    vault,
    async cleanup() {
      await vault.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

keyRotationContract('sqlite', async () => {
  const dir = tempDir();
  const vault = new SqliteKeyVault({ path: join(dir, 'keys.db'), masterKey: randomBytes(32) });
  return {
    vault,
    async cleanup() {
      await vault.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

function fileContains(path: string, bytes: Uint8Array): boolean {
  return existsSync(path) && readFileSync(path).includes(Buffer.from(bytes));
}

describe('sqlite key vault on disk', () => {
  let dir: string;
  let path: string;
  let masterKey: Buffer;
  let vault: SqliteKeyVault;

  beforeEach(() => {
    dir = tempDir();
    path = join(dir, 'keys.db');
    masterKey = randomBytes(32);
    vault = new SqliteKeyVault({ path, masterKey });
  });

  afterEach(async () => {
    await vault.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function wrappedKeys(tenant: string): Map<string, Buffer> {
    const db = new Database(path, { readonly: true });
    try {
      const rows = db.prepare('SELECT record_id, wrapped FROM data_keys WHERE tenant = ?').all(tenant) as {
        record_id: string;
        wrapped: Buffer;
      }[];
      return new Map(rows.map((r) => [r.record_id, r.wrapped]));
    } finally {
      db.close();
    }
  }

  it('after shredding, the wrapped keys are gone from the database file and its WAL', async () => {
    const ids = Array.from({ length: 2_000 }, (_, i) => `m${i}`);
    for (let i = 0; i < ids.length; i += 100) await vault.dataKeys('t1', ids.slice(i, i + 100), { create: true });
    const wrapped = wrappedKeys('t1');
    const victims = ids.filter((_, i) => i % 40 === 0);
    const survivor = wrapped.get('m1')!;

    await vault.shred('t1', victims);

    for (const id of victims) {
      expect(fileContains(path, wrapped.get(id)!), `wrapped key of ${id} in db`).toBe(false);
      expect(fileContains(`${path}-wal`, wrapped.get(id)!), `wrapped key of ${id} in wal`).toBe(false);
    }
    expect(fileContains(path, survivor) || fileContains(`${path}-wal`, survivor)).toBe(true);
  });

  it('after destroying a tenant, its wrapped tenant key and wrapped data keys are gone from the file and its WAL', async () => {
    await vault.dataKeys('t1', ['m1', 'm2'], { create: true });
    const wrapped = [...wrappedKeys('t1').values()];
    const db = new Database(path, { readonly: true });
    const salt = db.prepare("SELECT wrapped FROM tenant_keys WHERE tenant = 't1'").pluck().get() as Buffer;
    db.close();

    await vault.destroyTenant('t1');

    for (const bytes of [salt, ...wrapped]) {
      expect(fileContains(path, bytes)).toBe(false);
      expect(fileContains(`${path}-wal`, bytes)).toBe(false);
    }
  });

  it('keys survive reopening with the same master key, and another master key is refused at open', async () => {
    const created = await vault.dataKeys('t1', ['m1'], { create: true });
    await vault.close();

    vault = new SqliteKeyVault({ path, masterKey });
    const reopened = await vault.dataKeys('t1', ['m1'], { create: false });

    expect(reopened.get('m1')).toEqual(created.get('m1'));
    // Format 2 names the master key that wraps each tenant key: a wrong one stops the open with a clear code.
    expect(() => new SqliteKeyVault({ path, masterKey: randomBytes(32) })).toThrow(
      expect.objectContaining({ code: 'KEY_VAULT.MASTER_KEY_MISSING' }),
    );
  });

  it('a shred by another process is honoured despite this process having cached the key', async () => {
    await vault.dataKeys('t1', ['m1'], { create: true });
    const other = new SqliteKeyVault({ path, masterKey });

    await other.shred('t1', ['m1']);
    await other.close();

    await expect(vault.dataKeys('t1', ['m1'], { create: false })).rejects.toMatchObject({ code: 'KEY_VAULT.KEY_SHREDDED' });
  });

  it('a cache smaller than a batch still returns every key', async () => {
    const small = new SqliteKeyVault({ path: join(dir, 'small.db'), masterKey, cacheSize: 10 });
    const ids = Array.from({ length: 50 }, (_, i) => `m${i}`);

    const created = await small.dataKeys('t1', ids, { create: true });
    const again = await small.dataKeys('t1', ids, { create: false });
    await small.close();

    expect(again).toEqual(created);
    expect(again.size).toBe(50);
  });

  it('keys a call asks not to keep do not push cached keys out, and a shred still reaches a cached key', async () => {
    const small = new SqliteKeyVault({ path: join(dir, 'small.db'), masterKey, cacheSize: 2 });
    const queued = await small.dataKeys('t1', ['queued-1', 'queued-2'], { create: true });
    // A pass reading a backlog: other events' keys opened, its own records' keys created, none kept.
    await small.dataKeys('t1', ['read-once'], { create: true, keep: false });
    await small.dataKeys('t1', ['m1', 'm2', 'm3'], { create: true, keep: false });
    await small.dataKeys('t1', ['read-once'], { create: false, keep: false });
    // Spoil the stored copies: only the cache can still give the queued keys back.
    const db = new Database(join(dir, 'small.db'));
    db.prepare("UPDATE data_keys SET wrapped = zeroblob(60) WHERE record_id LIKE 'queued-%'").run();
    db.close();

    expect(await small.dataKeys('t1', ['queued-1', 'queued-2'], { create: false, keep: false })).toEqual(queued);
    await small.shred('t1', ['queued-1']);
    await expect(small.dataKeys('t1', ['queued-1'], { create: false })).rejects.toMatchObject({ code: 'KEY_VAULT.KEY_SHREDDED' });
    await small.close();
  });

  it('names no subject in the file, and a forgotten subject leaves no byte of its pseudonym', async () => {
    const subject = 'pseudonym-probe-subject-7f3a';
    const pseudonym = (await vault.subjectPseudonyms('t1', [subject, 'other-subject'], { create: true })).get(subject)!;
    await vault.close();
    vault = new SqliteKeyVault({ path, masterKey });
    expect((await vault.subjectPseudonyms('t1', [subject], { create: false })).get(subject)).toBe(pseudonym);
    const bytes = () => Buffer.concat([path, `${path}-wal`].filter(existsSync).map((p) => readFileSync(p)));
    expect(bytes().includes(Buffer.from(subject))).toBe(false);
    expect(bytes().includes(Buffer.from(pseudonym))).toBe(true);

    await vault.forgetSubject('t1', subject);

    expect(bytes().includes(Buffer.from(pseudonym))).toBe(false);
  });

  it('two processes writing the same subjects first, at the same time, get one pseudonym per subject', async () => {
    await vault.close();
    const vaultModule = new URL('./sqlite-key-vault.ts', import.meta.url).pathname;
    const startAt = Date.now() + 3_000;
    const writer = () => {
      // Both wait for the same instant, then race subject by subject (the first also creates the tenant row).
      const script = `import(${JSON.stringify(vaultModule)}).then(async ({ SqliteKeyVault }) => {
        const vault = new SqliteKeyVault({ path: ${JSON.stringify(path)}, masterKey: Buffer.from(${JSON.stringify(masterKey.toString('hex'))}, 'hex') });
        while (Date.now() < ${startAt}) await new Promise((resolve) => setTimeout(resolve, 1));
        const out = [];
        for (let i = 0; i < 300; i++) out.push('s' + i + ' ' + (await vault.subjectPseudonyms('acme', ['s' + i], { create: true })).get('s' + i));
        process.stdout.write(out.join('\\n'));
        await vault.close();
      });`;
      const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let output = '';
      child.stdout!.on('data', (chunk) => (output += chunk));
      return new Promise<string>((resolve, reject) =>
        child.once('exit', (code) => (code === 0 ? resolve(output) : reject(new Error(`writer exited ${code}`)))),
      );
    };
    const [a, b] = await Promise.all([writer(), writer()]);
    vault = new SqliteKeyVault({ path, masterKey });

    expect(a.split('\n')).toHaveLength(300);
    expect(a).toBe(b);
    const stored = await vault.subjectPseudonyms('acme', ['s0', 's299'], { create: false });
    expect(a).toContain(`s0 ${stored.get('s0')}`);
    expect(a).toContain(`s299 ${stored.get('s299')}`);
  }, 60_000);
});
