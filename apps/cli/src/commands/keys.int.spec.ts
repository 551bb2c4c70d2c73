import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, masterKeyIdOf, SqliteKeyVault } from '@elma/infra';
import { elmaArgs } from '../../../../tests/support/elma-process';

/**
 * `elma keys rotate` as an operator runs it, killed (SIGKILL) in the middle
 * of a rotation and run again: nothing is lost, everything stays readable,
 * the second run finishes the first one's work.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'elma-keys-kill-'));
const keysDb = join(dataDir, 'keys.db');
const oldKey = randomBytes(32).toString('hex');
const newKey = randomBytes(32).toString('hex');
const RECORDS = Array.from({ length: 3000 }, (_, i) => `m${i}`);
const TENANTS = Array.from({ length: 60 }, (_, i) => `t${i}`);
let before: Map<string, Uint8Array>;
let pseudonyms: Map<string, string>;

interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `elma keys …`; `killWhen` is polled every 25 ms and, once true, the process is SIGKILLed. */
function elmaKeys(args: string[], env: Record<string, string>, killWhen?: () => boolean): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, elmaArgs('keys', ...args), {
      env: { ...process.env, ELMA_DATA_DIR: dataDir, ELMA_EMBEDDER: 'hashing', ELMA_MASTER_KEY_PREVIOUS: '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = killWhen
      ? setInterval(() => {
          if (killWhen()) child.kill('SIGKILL');
        }, 25)
      : undefined;
    child.on('close', (status, signal) => {
      clearInterval(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

function count(sql: string, ...params: unknown[]): number {
  const db = new Database(keysDb, { readonly: true, timeout: 5_000 });
  try {
    return db
      .prepare(sql)
      .pluck()
      .get(...params) as number;
  } finally {
    db.close();
  }
}

async function readAll(masterKey: string, previous: string[] = []) {
  const vault = new SqliteKeyVault({
    path: keysDb,
    masterKey: Buffer.from(masterKey, 'hex'),
    previousMasterKeys: previous.map((k) => Buffer.from(k, 'hex')),
  });
  try {
    return {
      keys: await vault.dataKeys('acme', RECORDS, { create: false }),
      pseudonyms: await vault.subjectPseudonyms('acme', ['alice', '李雷'], { create: false }),
      others: await Promise.all(TENANTS.map((t) => vault.dataKeys(t, ['x'], { create: false }))),
    };
  } finally {
    await vault.close();
  }
}

beforeAll(async () => {
  // The folder as `elma start` leaves it with ELMA_MASTER_KEY set: its jwt.secret (the commands refuse a folder
  // no ELMA has started), and the key vault filled below.
  loadConfig({ ELMA_DATA_DIR: dataDir, ELMA_MASTER_KEY: oldKey });
  const vault = new SqliteKeyVault({ path: keysDb, masterKey: Buffer.from(oldKey, 'hex') });
  before = await vault.dataKeys('acme', RECORDS, { create: true });
  pseudonyms = await vault.subjectPseudonyms('acme', ['alice', '李雷'], { create: true });
  for (const tenant of TENANTS) await vault.dataKeys(tenant, ['x'], { create: true });
  await vault.close();
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('elma keys rotate, killed mid-rotation', () => {
  it('tenant key: SIGKILL halfway leaves every key readable; running the command again finishes', async () => {
    const rotated = () => count('SELECT count(*) FROM data_keys WHERE tenant = ? AND key_version = 2', 'acme');
    const killed = await elmaKeys(
      ['rotate', '--tenant', 'acme', '--batch-size', '20', '--pause-ms', '20'],
      { ELMA_MASTER_KEY: oldKey },
      () => {
        const n = rotated();
        return n > 200 && n < RECORDS.length - 200;
      },
    );
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const partial = rotated();
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(RECORDS.length);

    // Mid-rotation, another process reads every key (old and new version) unchanged.
    const middle = await readAll(oldKey);
    expect(middle.keys).toEqual(before);
    expect(middle.pseudonyms).toEqual(pseudonyms);

    const again = await elmaKeys(['rotate', '--tenant', 'acme'], { ELMA_MASTER_KEY: oldKey });
    expect(again.status, again.stderr).toBe(0);
    // Exactly the line the README shows, so a grep copied from it works.
    expect(again.stdout).toBe('{"rotated":"tenant","tenant":"acme","current":2,"retiring":[],"remaining":0}\n');
    expect(rotated()).toBe(RECORDS.length);
    expect(count('SELECT count(*) FROM tenant_keys WHERE tenant = ?', 'acme')).toBe(1);
    const after = await readAll(oldKey);
    expect(after.keys).toEqual(before);
    expect(after.pseudonyms).toEqual(pseudonyms);
  }, 180_000);

  it('master key: SIGKILL halfway; the new key alone is refused with a clear message until the rotation is finished with both', async () => {
    const newId = masterKeyIdOf(Buffer.from(newKey, 'hex'));
    const moved = () => count('SELECT count(*) FROM tenant_keys WHERE master_id = ?', newId);
    const both = { ELMA_MASTER_KEY: newKey, ELMA_MASTER_KEY_PREVIOUS: oldKey };
    const killed = await elmaKeys(['rotate', '--master', '--batch-size', '1', '--pause-ms', '60'], both, () => {
      const n = moved();
      return n > 5 && n < TENANTS.length - 5;
    });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(moved()).toBeGreaterThan(0);
    expect(moved()).toBeLessThan(TENANTS.length + 1);

    // What an operator sees after dropping the old key too early: exit 1, the key id missing, what to do.
    const early = await elmaKeys(['status'], { ELMA_MASTER_KEY: newKey });
    expect(early.status).toBe(1);
    expect(early.stderr).toContain(`KEY_VAULT.MASTER_KEY_MISSING`);
    expect(early.stderr).toContain(masterKeyIdOf(Buffer.from(oldKey, 'hex')));
    expect(early.stderr).toContain('ELMA_MASTER_KEY_PREVIOUS');
    expect(early.stderr).not.toContain(oldKey);

    const finished = await elmaKeys(['rotate', '--master'], both);
    expect(finished.status, finished.stderr).toBe(0);
    const report = { rotated: 'master', retired: [masterKeyIdOf(Buffer.from(oldKey, 'hex'))], current: newId };
    expect(finished.stdout).toMatch(/^\{"rotated":"master","retired":\["mk-[^"]+"\],"current":"mk-[^"]+","next":"[^"]+"\}\n$/);
    expect(JSON.parse(finished.stdout)).toMatchObject(report);
    // Run again, as after a run killed once it had retired the old key but before it printed: the same report.
    const resumed = await elmaKeys(['rotate', '--master'], both);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject(report);

    const status = await elmaKeys(['status', '--tenant', 'acme'], { ELMA_MASTER_KEY: newKey });
    expect(status.status, status.stderr).toBe(0);
    const shown = JSON.parse(status.stdout);
    expect(shown.master).toMatchObject({ current: newId, remaining: 0 });
    expect(shown.tenant).toMatchObject({ current: 2, remaining: 0 });
    expect(shown.rotations.map((r: { kind: string; state: string }) => `${r.kind}:${r.state}`)).toEqual(
      expect.arrayContaining(['master:done', 'tenant:done']),
    );
    const after = await readAll(newKey);
    expect(after.keys).toEqual(before);
    expect(after.pseudonyms).toEqual(pseudonyms);
    expect(after.others.every((m) => m.get('x')?.length === 32)).toBe(true);
    // The old key alone opens nothing any more.
    await expect(readAll(oldKey)).rejects.toMatchObject({ code: 'KEY_VAULT.MASTER_KEY_RETIRED' });
  }, 180_000);
});
