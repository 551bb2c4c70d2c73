import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../temporal/dev-server';
import { ensureOpenBao } from './openbao-install';

/** The parts of the server's answers the tests read. */
export interface OpenBaoAnswer {
  errors?: string[];
  data?: { keys?: string[]; latest_version?: number } & Record<string, unknown>;
  auth?: { client_token: string };
  root_token?: string;
  keys_base64?: string[];
  sealed?: boolean;
}

export interface OpenBaoDevServerOptions {
  /** Port to listen on (127.0.0.1); a free one is picked when omitted. */
  port?: number;
  /** Root token of the dev server; a random one when omitted. */
  rootToken?: string;
  /** Path of the `bao` binary; found or installed by `ensureOpenBao` when omitted. */
  bin?: string;
  /** Mount path of the transit engine enabled at start. Default `transit`. */
  transitMount?: string;
  /** How long to wait for the server to answer unsealed. Default 30 s. */
  startTimeoutMs?: number;
  /**
   * Keep the server's storage in this folder (raft storage, not the dev server's memory; it also uses port + 1), so a stopped server
   * started again on the same folder (and port) has the same keys: initialised on the first start
   * (one unseal key, kept with the root token in `<dir>/init.json`), unsealed on every start.
   */
  storageDir?: string;
  /** Record every request in this file (a file audit device, declared in the configuration as OpenBao requires). */
  auditFile?: string;
}

export interface OpenBaoDevServer {
  /** `http://127.0.0.1:<port>` */
  address: string;
  port: number;
  rootToken: string;
  /** The dev server's single unseal key, to unseal it again after `seal()`. */
  unsealKey: string;
  transitMount: string;
  startupMs: number;
  pid: number | undefined;
  /** Seals the server (every request then answers 503 until `unseal()`). */
  seal(): Promise<void>;
  unseal(): Promise<void>;
  /**
   * Stops the process with SIGSTOP (it then accepts connections but answers nothing) and returns once every one of its
   * threads is stopped: `kill` returns before that, and until the thread the signal went to has run, the others go on serving.
   */
  hang(): Promise<void>;
  /** Lets a hung process run again (SIGCONT). */
  resume(): void;
  /** Calls the server's HTTP API as root: `{ status, body }`. */
  api(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: OpenBaoAnswer | undefined }>;
  /** Stops the process and waits for its exit. Idempotent. The dev server keeps everything in memory: all keys are gone. */
  stop(): Promise<void>;
}

/**
 * Starts `bao server -dev` (or, with `storageDir`, a server on raft storage) (in-memory storage, unsealed, a root token) with the transit engine enabled:
 * a real key-management server for the tests of the transit key vault. Its output is kept in memory only,
 * shown when startup fails.
 */
export async function startOpenBaoDevServer(options: OpenBaoDevServerOptions = {}): Promise<OpenBaoDevServer> {
  const bin = options.bin ?? (await ensureOpenBao()).bin;
  const port = options.port ?? (await freePort());
  const rootToken = options.rootToken ?? `elma-test-${randomBytes(12).toString('hex')}`;
  const transitMount = options.transitMount ?? 'transit';
  const address = `http://127.0.0.1:${port}`;
  const startedAt = performance.now();
  const args = options.storageDir
    ? ['server', `-config=${persistentConfig(options.storageDir, port, options.auditFile)}`]
    : ['server', '-dev', `-dev-listen-address=127.0.0.1:${port}`, `-dev-root-token-id=${rootToken}`, '-dev-no-store-token'];
  if (!options.storageDir && options.auditFile) args.push(`-config=${auditConfig(options.auditFile)}`);
  // Under setpriv the kernel kills the server when the test process dies, even by SIGKILL (a killed test worker).
  const [command, ...commandArgs] = [...parentDeathWrapper(), bin, ...args];
  const child = spawn(
    command,
    commandArgs,
    // HOME: the CLI would otherwise write a token helper file into the real home folder.
    { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: process.env.TMPDIR ?? '/tmp', BAO_LOG_LEVEL: 'warn' } },
  );
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-8_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      process.removeListener('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
    })());

  let token = rootToken;
  let unsealKey: string | undefined;
  const api = async (method: string, path: string, body?: unknown, as = token) => {
    const response = await fetch(`${address}/v1/${path}`, {
      method,
      headers: { 'X-Vault-Token': as, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      // Generous: `sys/init` on raft storage writes and syncs its first keys, which took over 10 s on a loaded
      // 2-core machine (a management call of a test server, not the vault's own timeouts, which stay short).
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as OpenBaoAnswer) : undefined };
  };

  const serving = async (): Promise<{ token: string; unsealKey: string }> => {
    const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`OpenBao dev server (${bin}) exited before serving ${address}\n--- last server output ---\n${output.trim()}`);
      }
      const health = await fetch(`${address}/v1/sys/health`, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
      if (options.storageDir && health) {
        // 501: not initialised yet; 503: sealed. Both answer once the listener is up.
        ({ token, unsealKey } = await initAndUnseal(options.storageDir, api));
        break;
      }
      // The unseal key is printed just after the server starts answering.
      if (health?.status === 200 && /Unseal Key: \S+\n/.test(output)) break;
      if (Date.now() > deadline) {
        throw new Error(`OpenBao dev server did not answer at ${address} in time\n--- last server output ---\n${output.trim()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    unsealKey ??= /Unseal Key: (\S+)/.exec(output)?.[1];
    const existing = await api('GET', `sys/mounts/${transitMount}`);
    const mounted = existing.status === 200 ? existing : await api('POST', `sys/mounts/${transitMount}`, { type: 'transit' });
    if (!unsealKey || mounted.status >= 300) {
      throw new Error(
        `OpenBao dev server at ${address}: ${unsealKey ? `enabling transit answered ${mounted.status}` : 'no unseal key printed'}`,
      );
    }
    return { token, unsealKey };
  };
  try {
    ({ token, unsealKey } = await serving());
  } catch (error) {
    // Whatever failed (a timeout, init, unseal, mounting transit), no server is left behind.
    await stop();
    throw error;
  }
  return {
    address,
    port,
    rootToken: token,
    unsealKey,
    transitMount,
    startupMs: Math.round(performance.now() - startedAt),
    pid: child.pid,
    api,
    async seal() {
      const answer = await api('PUT', 'sys/seal');
      if (answer.status >= 300) throw new Error(`sealing answered ${answer.status}`);
    },
    async unseal() {
      const answer = await api('PUT', 'sys/unseal', { key: unsealKey });
      if (answer.status >= 300 || answer.body?.sealed) throw new Error(`unsealing answered ${answer.status}`);
      // Unsealed, the server mounts its engines again; until then their paths answer 404 "no handler for route".
      for (const deadline = Date.now() + 15_000; ;) {
        const keys = await api('LIST', `${transitMount}/keys`);
        if (keys.status !== 503 && !(keys.status === 404 && (keys.body?.errors ?? []).some((e) => /no handler/i.test(e)))) return;
        if (Date.now() > deadline) throw new Error(`OpenBao did not mount ${transitMount} again after unsealing (${keys.status})`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async hang() {
      process.kill(child.pid!, 'SIGSTOP');
      for (const deadline = Date.now() + 10_000; !allThreadsStopped(child.pid!);) {
        if (Date.now() > deadline) throw new Error(`OpenBao (pid ${child.pid}) did not stop within 10 s of SIGSTOP`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    resume() {
      process.kill(child.pid!, 'SIGCONT');
    },
    stop,
  };
}

/** Whether every thread of the process is stopped (state `T` in `/proc/<pid>/task/<tid>/stat`). */
function allThreadsStopped(pid: number): boolean {
  const tasks = readdirSync(`/proc/${pid}/task`);
  return tasks.every((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    // The state follows the command name, which is in parentheses and may itself hold spaces or parentheses.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'T';
  });
}

/** Writes the server's configuration into the storage folder: raft storage, a plain-HTTP listener on 127.0.0.1 (and the next port for its cluster). */
function persistentConfig(dir: string, port: number, auditFile?: string): string {
  mkdirSync(join(dir, 'data'), { recursive: true, mode: 0o700 });
  const file = join(dir, 'server.hcl');
  writeFileSync(
    file,
    [
      // OpenBao 2 keeps only integrated (raft) storage: one node, its own cluster.
      `storage "raft" {\n  path = ${JSON.stringify(join(dir, 'data'))}\n  node_id = "elma-test"\n}`,
      `listener "tcp" {\n  address = "127.0.0.1:${port}"\n  cluster_address = "127.0.0.1:${port + 1}"\n  tls_disable = true\n}`,
      `api_addr = "http://127.0.0.1:${port}"`,
      `cluster_addr = "http://127.0.0.1:${port + 1}"`,
      ...(auditFile ? [auditStanza(auditFile)] : []),
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return file;
}

/** Initialises the server on its first start (keeping the unseal key and root token in the folder), then unseals it. */
async function initAndUnseal(
  dir: string,
  api: (method: string, path: string, body?: unknown, as?: string) => Promise<{ status: number; body: OpenBaoAnswer | undefined }>,
): Promise<{ token: string; unsealKey: string }> {
  const record = join(dir, 'init.json');
  if (!existsSync(record)) {
    const init = await api('PUT', 'sys/init', { secret_shares: 1, secret_threshold: 1 });
    if (init.status !== 200) throw new Error(`OpenBao init answered ${init.status}: ${JSON.stringify(init.body)}`);
    writeFileSync(record, JSON.stringify({ token: init.body?.root_token, unsealKey: init.body?.keys_base64?.[0] }), { mode: 0o600 });
  }
  const { token, unsealKey } = JSON.parse(readFileSync(record, 'utf8')) as { token: string; unsealKey: string };
  const unsealed = await api('PUT', 'sys/unseal', { key: unsealKey });
  if (unsealed.status !== 200 || unsealed.body?.sealed) throw new Error(`OpenBao unseal answered ${unsealed.status}`);
  // Unsealed, the server still needs a moment to become active.
  for (const deadline = Date.now() + 15_000; ;) {
    const health = await api('GET', 'sys/health');
    if (health.status === 200) return { token, unsealKey };
    if (Date.now() > deadline) throw new Error(`OpenBao did not become active after unsealing (health ${health.status})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function auditStanza(file: string): string {
  return `audit "file" "elma-test" {\n  options {\n    file_path = ${JSON.stringify(file)}\n  }\n}`;
}

/** A configuration file beside the audit log that only declares the audit device (the dev server's flags set the rest). */
function auditConfig(file: string): string {
  const config = `${file}.hcl`;
  writeFileSync(config, `${auditStanza(file)}\n`, { mode: 0o600 });
  return config;
}

/** `setpriv --pdeathsig SIGKILL --` where util-linux has it (as for the Temporal dev server). */
function parentDeathWrapper(): string[] {
  if (process.platform !== 'linux') return [];
  return (parentDeath ??= spawnSync('setpriv', ['--help'], { encoding: 'utf8' }).stdout?.includes('--pdeathsig')
    ? ['setpriv', '--pdeathsig', 'SIGKILL', '--']
    : []);
}
let parentDeath: string[] | undefined;
