import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort, listFiles, loadConfig, mintToken, RESTORE_STEPS, scanFiles, type RestoreStep } from '@elma/infra';
import { elmaArgs, eraseOverHttp } from '../../../tests/support/elma-process';
import { spawnElmaStart, type StartedElma } from './embedded-env';

/** The steps at which a killed restore has written its marker: the next start refuses until the restore is run again. */
const AFTER_MARKER: RestoreStep[] = ['swapping', 'swapped'];

/**
 * `elma restore` killed with SIGKILL at every step of its staging and swap
 * (a test-only pause, ELMA_TEST_RESTORE_PAUSE, holds it at the step), then
 * what the operator does: `elma start`, and when it refuses, the same restore
 * again and `elma start`. Once ELMA serves (the erasure ledger re-applied)
 * and has stopped, no file anywhere in the data folder holds the erased
 * subject's text. One seeded folder and one backup, copied for each step.
 */
describe('a restore killed at any step leaves no erased text in the data folder', () => {
  const root = mkdtempSync(join(tmpdir(), 'elma-restore-kill-'));
  const seeded = join(root, 'seeded');
  const backupDir = join(root, 'backup');
  const ERASED = 'Ms Lin keeps the Ravensworth lease papers in locker 41.';
  const KEPT = 'Mr Okafor prefers the Lagos office for meetings.';
  const needles = [{ id: 'erased', bytes: Buffer.from(ERASED, 'utf8') }];
  let env: NodeJS.ProcessEnv;
  let elma: StartedElma | undefined;

  const cli = (dataDir: string, ...args: string[]) =>
    spawnSync(process.execPath, elmaArgs(...args), { env: { ...env, ELMA_DATA_DIR: dataDir }, encoding: 'utf8', timeout: 120_000 });
  const start = async (dataDir: string) => {
    elma = await spawnElmaStart({ ...env, ELMA_DATA_DIR: dataDir, ELMA_LOG_LEVEL: 'info' });
    return elma;
  };
  const stop = async () => {
    await elma?.stop();
    elma = undefined;
  };
  const scan = async (dir: string) => scanFiles(await listFiles([dir]), needles);

  beforeAll(async () => {
    const port = await freePort();
    env = {
      ...process.env,
      ELMA_PORT: String(port),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: `elma-restore-kill-${port}`,
    };
    const api = `http://127.0.0.1:${port}`;
    await start(seeded);
    const config = loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: seeded });
    const tokenOf = async (sub: string, roles: string[]) =>
      mintToken(config.jwtSecret, { tenant: 'acme', sub, roles, purposes: ['support'], clearance: 'restricted' });
    const agent = { 'content-type': 'application/json', authorization: `Bearer ${await tokenOf('agent-1', ['agent'])}` };
    const dpo = { 'content-type': 'application/json', authorization: `Bearer ${await tokenOf('dpo-1', ['dpo', 'agent'])}` };
    const post = async (path: string, body: unknown, headers = agent) =>
      fetch(`${api}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

    const events = [
      { subject: 'cust-lin', text: ERASED },
      { subject: 'cust-okafor', text: KEPT },
    ].map(({ subject, text }, i) => ({
      subject,
      occurredAt: `2026-11-2${i}T09:30:00Z`,
      activity: 'chat.turn',
      content: { text },
      source: { system: 'crm', externalId: `m-${i}` },
    }));
    const ingested = await post('/v1/events', { events });
    expect(ingested.status).toBe(202);
    const { position } = (await ingested.json()) as { position: string };
    const recalled = await post('/v1/recall', {
      query: 'Ravensworth lease',
      purpose: 'support',
      consistency: 'strong',
      afterPosition: position,
    });
    expect(((await recalled.json()) as { items: { text: string }[] }).items.map((i) => i.text)).toContain(ERASED);

    const backup = cli(seeded, 'backup', '--to', backupDir);
    expect(backup.status, backup.stderr).toBe(0);

    await eraseOverHttp(api, dpo, { scope: { type: 'subject', subject: 'cust-lin' }, reason: 'subject_request' });
    await stop();

    // The erased folder holds none of the text; the backup does (so each scan below can fail).
    expect((await scan(seeded)).findings).toEqual([]);
    expect((await scan(backupDir)).findings.length).toBeGreaterThan(0);
  }, 240_000);

  afterAll(async () => {
    await stop();
    rmSync(root, { recursive: true, force: true });
  });

  it.each(RESTORE_STEPS)(
    'killed at %s: the old folder or the restored one, and after the next start no erased text anywhere in it',
    async (step) => {
      const dataDir = join(root, step);
      cpSync(seeded, dataDir, { recursive: true });

      await killedRestore(env, dataDir, step, backupDir);
      if (step === 'staging' || step === 'staged') {
        // The issue: the staged copy, still in the folder, holds the erased text (the scans below can fail).
        expect(readdirSync(dataDir).filter((name) => name.startsWith('.restore-') && name !== '.restore-in-progress')).toHaveLength(1);
        expect((await scan(dataDir)).findings.length).toBeGreaterThan(0);
      }

      // What the operator does: start; if ELMA refuses, what its message says (the same restore again), then start.
      let refused = false;
      try {
        await start(dataDir);
      } catch (error) {
        refused = true;
        expect((error as Error).message).toContain("did not finish: run the same 'elma restore' again");
        const rerun = cli(dataDir, 'restore', '--from', backupDir);
        expect(rerun.status, rerun.stderr).toBe(0);
        await start(dataDir);
      }
      expect(refused).toBe(AFTER_MARKER.includes(step));
      // Served only once the ledger was re-applied: to the restored folder it erases the subject again.
      const restored = AFTER_MARKER.includes(step) || step === 'done';
      expect(elma!.output()).toContain('erasure ledger re-applied to restored data');
      expect(elma!.output()).toContain(restored ? '"recordsPurged":1' : '"recordsPurged":0');
      await stop();

      const found = await scan(dataDir);
      expect(found.files).toBeGreaterThan(3);
      expect(found.findings.map((f) => f.path.slice(dataDir.length + 1))).toEqual([]);
      expect(readdirSync(dataDir).filter((name) => name.startsWith('.restore-'))).toEqual([]);
      rmSync(dataDir, { recursive: true, force: true });
    },
    180_000,
  );
});

/** Runs `elma restore` held at `step` by the test-only pause, and kills it there with SIGKILL. */
async function killedRestore(env: NodeJS.ProcessEnv, dataDir: string, step: RestoreStep, from: string): Promise<void> {
  const child = spawn(process.execPath, elmaArgs('restore', '--from', from), {
    env: { ...env, ELMA_DATA_DIR: dataDir, ELMA_TEST_RESTORE_PAUSE: step },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (const deadline = Date.now() + 60_000; !output.includes(`paused at ${step}`);) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`elma restore did not reach ${step}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  await exited;
}
