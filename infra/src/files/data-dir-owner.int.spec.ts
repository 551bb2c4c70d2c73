import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../event-log';
import { SqliteKeyVault } from '../key-vault';
import { claimDataDir, DataDirInUse, tidyDataDir } from './data-dir-owner';

const ownerModule = new URL('./data-dir-owner.ts', import.meta.url).pathname;
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'elma-owner-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Another process that claims the folder and holds it until killed. */
async function otherOwner(dataDir: string) {
  const script = `import(${JSON.stringify(ownerModule)}).then(({ claimDataDir }) => {
    claimDataDir(${JSON.stringify(dataDir)}, { command: 'elma start', ports: { api: 18299 } });
    process.stdout.write('claimed');
    setInterval(() => {}, 60_000);
  });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  for (const deadline = Date.now() + 30_000; !out.includes('claimed');) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the other owner did not claim the folder: ${out}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return child;
}

describe('one owner per data folder', () => {
  it('refuses a claim on a folder another process owns, at once, naming its pid and ports', async () => {
    const other = await otherOwner(dir);
    try {
      const startedAt = Date.now();
      let refused: unknown;
      try {
        claimDataDir(dir, { command: 'elma start', ports: {} }).release();
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(DataDirInUse);
      expect((refused as Error).message).toContain(`pid ${other.pid} (elma start`);
      expect((refused as Error).message).toContain('api 18299');
      expect(Date.now() - startedAt).toBeLessThan(1_000);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('is free again as soon as the owner is killed with SIGKILL, with no stale lock to clean', async () => {
    const other = await otherOwner(dir);
    expect(() => claimDataDir(dir, { command: 'elma start', ports: {} })).toThrow(DataDirInUse);
    const exited = new Promise((resolve) => other.once('exit', resolve));
    other.kill('SIGKILL');
    await exited;
    const ownership = claimDataDir(dir, { command: 'elma start', ports: {} });
    ownership.release();
  });
});

describe("a dead owner's temporary copies", () => {
  /** What a restore, a graph save and the owner's record leave when their process is killed midway, beside files that stay. */
  function leaveBehind(dataDir: string) {
    mkdirSync(join(dataDir, '.restore-a811da11', 'index'), { recursive: true });
    writeFileSync(join(dataDir, '.restore-a811da11', 'index', 'tenant-acme.db'), 'staged rows');
    writeFileSync(join(dataDir, 'owner.json.tmp'), '{');
    mkdirSync(join(dataDir, 'index'), { recursive: true });
    writeFileSync(join(dataDir, 'index', 'tenant-acme.usearch.tmp'), 'half a graph');
    for (const kept of ['.restore-in-progress', 'events.db', 'events.db-journal', 'index/tenant-acme.db', 'index/tenant-acme.db-wal'])
      writeFileSync(join(dataDir, kept), 'kept');
  }
  const kept = ['.restore-in-progress', 'events.db', 'events.db-journal', 'index', 'owner.json', 'owner.lock'];

  it('are removed by the next owner when it claims the folder, SQLite journals and the restore marker kept', () => {
    leaveBehind(dir);
    claimDataDir(dir, { command: 'elma start', ports: {} }).release();
    expect(readdirSync(dir).sort()).toEqual(kept);
    expect(readdirSync(join(dir, 'index')).sort()).toEqual(['tenant-acme.db', 'tenant-acme.db-wal']);
  });

  it('are removed by a process that shares the folder only while no process owns it', async () => {
    const other = await otherOwner(dir);
    leaveBehind(dir);
    try {
      expect(tidyDataDir(dir)).toBe(false);
      expect(readdirSync(dir)).toContain('.restore-a811da11');
    } finally {
      const exited = new Promise((resolve) => other.once('exit', resolve));
      other.kill('SIGKILL');
      await exited;
    }
    expect(tidyDataDir(dir)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(kept);
  });
});

describe('database files are owner-only', () => {
  it('the event log and key vault create their files, -wal and -shm 0600 whatever the umask', async () => {
    const log = SqliteEventLog.open(join(dir, 'events.db'));
    await log.append('events-acme-s1', [{ id: '6f1c1d6a-0d56-4b8e-9f0c-3f1f8e9b2a10', type: 'Test', data: { n: 1 } }], {
      expectedRevision: 'any',
    });
    const vault = new SqliteKeyVault({ path: join(dir, 'keys.db'), masterKey: randomBytes(32) });
    await vault.dataKeys('acme', ['r1'], { create: true });
    try {
      for (const file of ['events.db', 'events.db-wal', 'events.db-shm', 'keys.db', 'keys.db-wal', 'keys.db-shm']) {
        expect(`${file} ${mode(join(dir, file))}`).toBe(`${file} 600`);
      }
    } finally {
      await vault.close();
      await log.close();
    }
  });

  it('tightens a database file left readable by others', async () => {
    const path = join(dir, 'events.db');
    writeFileSync(path, '');
    chmodSync(path, 0o644);
    const log = SqliteEventLog.open(path);
    await log.close();
    expect(mode(path)).toBe('600');
  });
});
