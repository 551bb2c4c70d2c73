import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteKeyVault } from './sqlite-key-vault';

const vaultModule = new URL('./sqlite-key-vault.ts', import.meta.url).pathname;
const digest = (key: Uint8Array) => createHash('sha256').update(key).digest('hex').slice(0, 16);

/**
 * `elma api` and `elma worker` share one key vault file (docker-compose.yml).
 * SQLite's own locking must keep it whole: two real processes write data keys
 * at once, one is killed with SIGKILL mid-write, and every key either process
 * acknowledged is still there, unchanged, in a file that passes its integrity check.
 */
describe('a key vault shared by two processes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'elma-vault-shared-'));
  const path = join(dir, 'keys.db');
  const masterKey = randomBytes(32);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Creates data keys one by one and prints `id digest` for each once dataKeys() has returned. */
  function writer(
    name: string,
    count: number,
  ): { child: ChildProcess; acknowledged: Map<string, string>; exited: Promise<number | null>; stderr: () => string } {
    const script = `import(${JSON.stringify(vaultModule)}).then(async ({ SqliteKeyVault }) => {
      const { createHash } = await import('node:crypto');
      const vault = new SqliteKeyVault({ path: ${JSON.stringify(path)}, masterKey: Buffer.from(${JSON.stringify(masterKey.toString('hex'))}, 'hex') });
      for (let i = 0; i < ${count}; i++) {
        const id = '${name}-' + i;
        const keys = await vault.dataKeys('acme', [id], { create: true });
        process.stdout.write(id + ' ' + createHash('sha256').update(keys.get(id)).digest('hex').slice(0, 16) + '\\n');
      }
      await vault.close();
    });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const acknowledged = new Map<string, string>();
    let buffered = '';
    child.stdout!.on('data', (chunk) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const [id, hash] = line.split(' ');
        acknowledged.set(id, hash);
      }
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr = (stderr + chunk).slice(-2_000)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    return { child, acknowledged, exited, stderr: () => stderr };
  }

  it('loses no acknowledged key and stays whole when one writer is killed mid-write', async () => {
    const killed = writer('a', 100_000);
    const survivor = writer('b', 1_500);
    for (const deadline = Date.now() + 60_000; killed.acknowledged.size < 300 || survivor.acknowledged.size < 300;) {
      if (Date.now() > deadline) {
        // What each writer managed and said, so a stall is diagnosed from the CI log alone.
        const state = (w: ReturnType<typeof writer>, name: string) =>
          `${name}: ${w.acknowledged.size} acknowledged, exit ${w.child.exitCode ?? 'none yet'}, stderr: ${w.stderr().trim() || '(empty)'}`;
        throw new Error(`the writers did not get going\n${state(killed, 'a')}\n${state(survivor, 'b')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(await survivor.exited).toBe(0);
    expect(survivor.acknowledged.size).toBe(1_500);

    const db = new Database(path, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
    const vault = new SqliteKeyVault({ path, masterKey });
    try {
      for (const writes of [killed.acknowledged, survivor.acknowledged]) {
        const ids = [...writes.keys()];
        const keys = await vault.dataKeys('acme', ids, { create: false });
        expect(ids.filter((id) => !keys.has(id) || digest(keys.get(id)!) !== writes.get(id))).toEqual([]);
      }
    } finally {
      await vault.close();
    }
    console.info(
      `[faults] shared key vault: ${killed.acknowledged.size} keys from the killed writer and ${survivor.acknowledged.size} from the other, all kept`,
    );
  });
});
