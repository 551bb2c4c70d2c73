import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { Connection } from '@temporalio/client';
import { ensureTemporalCli } from './cli-binary';

/** Search attribute types accepted by `temporal server start-dev --search-attribute NAME=Type`. */
export type SearchAttributeTypeName = 'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

export interface TemporalDevServerOptions {
  /** SQLite file that keeps workflow history across restarts; in-memory when omitted. */
  dbFile?: string;
  /** Front-end gRPC port; a free one is picked when omitted. */
  port?: number;
  /** Web UI port; a free one is picked when omitted (ignored when headless). */
  uiPort?: number;
  /** No Web UI. Default false: operators follow erasures in the UI. */
  headless?: boolean;
  /** Created at launch unless it is `default` (which always exists). Default `default`. */
  namespace?: string;
  /** Registered at launch in every namespace, e.g. `{ ElmaTenant: 'Keyword' }`. */
  searchAttributes?: Record<string, SearchAttributeTypeName>;
  /** Path of the `temporal` CLI; found or installed by `ensureTemporalCli` when omitted. */
  cli?: string;
  /** How long to wait for the server to serve the namespace. Default 60 s. */
  startTimeoutMs?: number;
  /**
   * Where to record the server's pid (in the data folder). A server recorded there by an earlier process
   * that died without stopping it is stopped first, if it is still our `temporal` on our database file.
   */
  pidFile?: string;
}

export interface TemporalDevServer {
  /** `127.0.0.1:<port>`, for `Connection.connect` / `NativeConnection.connect`. */
  address: string;
  /** Web UI, unless headless. */
  uiUrl?: string;
  namespace: string;
  /** Wall time from spawn to serving the namespace with its search attributes. */
  startupMs: number;
  /** Stops the whole process group (the CLI runs the server and UI as children) and waits for exit. Idempotent. */
  stop(): Promise<void>;
  /** Settles when the server process has exited, whether stop() asked it to or it died. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  pid: number | undefined;
}

const HOST = '127.0.0.1';
const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Starts `temporal server start-dev` and resolves once the namespace is served with the requested search
 * attributes. The server's own output is kept in memory only (a short tail, shown when startup fails) and
 * never forwarded: workflow and activity payloads must not end up in logs.
 */
export async function startTemporalDevServer(options: TemporalDevServerOptions = {}): Promise<TemporalDevServer> {
  const namespace = options.namespace ?? 'default';
  for (const name of Object.keys(options.searchAttributes ?? {})) {
    if (!NAME_PATTERN.test(name)) throw new Error(`invalid search attribute name: ${JSON.stringify(name)}`);
  }
  const cli = options.cli ?? (await ensureTemporalCli());
  if (options.pidFile) await stopRecordedServer(options.pidFile, options.dbFile);
  // Free ports are probed, then released and handed to the server: another process can grab one in between,
  // so a lost race (and only that) is retried with fresh ports. The server also picks free ports for its
  // internal services itself, and one of those may collide with the port it was given before it binds it
  // ("service=worker ... address already in use" for the frontend's port): with given ports, the same ports
  // are tried again, which picks other internal ones. A port really held by another process fails each time.
  const attempts = 3;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(cli, namespace, options);
    } catch (err) {
      if (attempt >= attempts || !(err instanceof DevServerStartError) || !err.portInUse) throw err;
      await sleep(250 * attempt);
    }
  }
}

class DevServerStartError extends Error {
  constructor(
    message: string,
    readonly portInUse: boolean,
  ) {
    super(message);
    this.name = 'DevServerStartError';
  }
}

async function startOnce(cli: string, namespace: string, options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const headless = options.headless ?? false;
  const port = options.port ?? (await freePort());
  const uiPort = headless ? undefined : (options.uiPort ?? (await freePort([port])));
  const args = startDevArgs(port, uiPort, namespace, options);

  const startedAt = performance.now();
  // detached: the server gets its own process group, so stop() reaches the UI server and any helpers too.
  // Under setpriv the kernel kills the server when this process dies, kill -9 included (see parentDeathWrapper).
  const [command, ...commandArgs] = [...parentDeathWrapper(), cli, ...args];
  const child = spawn(command, commandArgs, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  if (options.pidFile && child.pid !== undefined) recordServer(options.pidFile, { pid: child.pid, dbFile: options.dbFile, port });
  const output = new Tail(4_000);
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));
  // If the test runner or app dies without calling stop(), do not leave an orphaned server behind.
  const killOnExit = () => killGroup(child, 'SIGKILL');
  process.once('exit', killOnExit);
  // Once it is gone its pid may be reused: never signal it again.
  void exited.then(() => process.removeListener('exit', killOnExit));

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      process.removeListener('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        killGroup(child, 'SIGTERM');
        const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      if (options.pidFile) forgetServer(options.pidFile, child.pid);
    })());

  const address = `${HOST}:${port}`;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const expected = Object.keys(options.searchAttributes ?? {});
  let lastProbeError = 'no probe yet';
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null || spawnError) {
      await stop();
      throw exitedBeforeServing(cli, address, spawnError ?? child, output.text());
    }
    const probe = await probeNamespace(address, namespace, expected);
    if (probe === true) break;
    lastProbeError = probe;
    if (Date.now() > deadline) {
      await stop();
      const text = output.text();
      throw new DevServerStartError(
        `Temporal dev server did not serve namespace ${namespace} at ${address} within ${timeoutMs} ms (last probe: ${lastProbeError})` +
          `${text ? `\n--- last server output ---\n${text}` : ''}`,
        false,
      );
    }
    await Promise.race([sleep(250), exited]);
  }

  return {
    address,
    uiUrl: uiPort === undefined ? undefined : `http://${HOST}:${uiPort}`,
    namespace,
    startupMs: Math.round(performance.now() - startedAt),
    stop,
    exited,
    pid: child.pid,
  };
}

/** `temporal server start-dev` with its ports, database, namespace and search attributes; headless when there is no UI port. */
function startDevArgs(port: number, uiPort: number | undefined, namespace: string, options: TemporalDevServerOptions): string[] {
  const args = ['server', 'start-dev', '--ip', HOST, '--port', String(port), '--log-level', 'error'];
  if (options.headless ?? false) args.push('--headless');
  else args.push('--ui-port', String(uiPort), '--ui-disable-news-fetch');
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  if (namespace !== 'default') args.push('--namespace', namespace);
  for (const [name, type] of Object.entries(options.searchAttributes ?? {})) args.push('--search-attribute', `${name}=${type}`);
  return args;
}

/** The server failed to spawn, or exited before serving: why, with the end of its output; a port taken is told apart. */
function exitedBeforeServing(
  cli: string,
  address: string,
  cause: Error | { exitCode: number | null; signalCode: NodeJS.Signals | null },
  text: string,
): DevServerStartError {
  return new DevServerStartError(
    `Temporal dev server (${cli}) exited before serving ${address}` +
      `${cause instanceof Error ? `: ${cause.message}` : ` (exit code ${cause.exitCode}, signal ${cause.signalCode})`}` +
      `${text ? `\n--- last server output ---\n${text}` : ''}`,
    /address already in use|bind:/i.test(text),
  );
}

/**
 * `setpriv --pdeathsig SIGKILL --` where util-linux has it (Linux): the
 * kernel then kills the server when the process that spawned it dies, so a
 * kill -9 of ELMA leaves no orphan holding the ports and the database.
 * Elsewhere the pid file catches the orphan at the next start.
 */
function parentDeathWrapper(): string[] {
  if (process.platform !== 'linux') return [];
  return (parentDeath ??= spawnSync('setpriv', ['--help'], { encoding: 'utf8' }).stdout?.includes('--pdeathsig')
    ? ['setpriv', '--pdeathsig', 'SIGKILL', '--']
    : []);
}
let parentDeath: string[] | undefined;

interface RecordedServer {
  pid: number;
  dbFile?: string;
  port: number;
}

function recordServer(pidFile: string, server: RecordedServer): void {
  writeFileSync(`${pidFile}.tmp`, `${JSON.stringify(server)}\n`, { mode: 0o600 });
  renameSync(`${pidFile}.tmp`, pidFile);
}

function forgetServer(pidFile: string, pid: number | undefined): void {
  try {
    if ((JSON.parse(readFileSync(pidFile, 'utf8')) as RecordedServer).pid === pid) rmSync(pidFile, { force: true });
  } catch {
    // Gone or unreadable: nothing recorded to forget.
  }
}

/**
 * Stops the server an earlier process recorded in `pidFile` and left behind.
 * Only if that pid still runs `temporal server start-dev` on this database
 * file: a pid may have been reused by an unrelated process since.
 */
export async function stopRecordedServer(pidFile: string, dbFile: string | undefined): Promise<boolean> {
  if (!existsSync(pidFile)) return false;
  let recorded: RecordedServer;
  try {
    recorded = JSON.parse(readFileSync(pidFile, 'utf8')) as RecordedServer;
  } catch {
    rmSync(pidFile, { force: true });
    return false;
  }
  const ours = (args: string[] | undefined) =>
    !!args &&
    args.some((a) => /(^|\/)temporal(\.exe)?$/.test(a)) &&
    args.includes('start-dev') &&
    (dbFile === undefined || args.includes(dbFile));
  let stopped = false;
  if (Number.isInteger(recorded.pid) && recorded.pid > 1 && ours(commandLine(recorded.pid))) {
    signal(recorded.pid, 'SIGTERM');
    for (const deadline = Date.now() + 10_000; ours(commandLine(recorded.pid));) {
      if (Date.now() > deadline) {
        signal(recorded.pid, 'SIGKILL');
        break;
      }
      await sleep(100);
    }
    // The server released its port only once the process is gone.
    for (const deadline = Date.now() + 5_000; ours(commandLine(recorded.pid)) && Date.now() < deadline;) await sleep(100);
    stopped = true;
  }
  rmSync(pidFile, { force: true });
  return stopped;
}

/** The argument vector of a live process; undefined if it is gone or a zombie. */
function commandLine(pid: number): string[] | undefined {
  if (process.platform === 'linux') {
    try {
      const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return raw ? raw.split('\0').filter(Boolean) : undefined;
    } catch {
      return undefined;
    }
  }
  const ps = spawnSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' });
  return ps.status === 0 && ps.stdout.trim() ? ps.stdout.trim().split(/\s+/) : undefined;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    // The group first: the server was started as a group leader (detached).
    process.kill(-pid, name);
  } catch {
    try {
      process.kill(pid, name);
    } catch {
      // Already gone.
    }
  }
}

/** true once the namespace answers and lists every expected custom search attribute; else why not. */
async function probeNamespace(address: string, namespace: string, expected: string[]): Promise<true | string> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 1_000 });
    const { customAttributes } = await connection.withDeadline(Date.now() + 2_000, () =>
      connection!.operatorService.listSearchAttributes({ namespace }),
    );
    const missing = expected.filter((name) => !customAttributes || !(name in customAttributes));
    return missing.length === 0 ? true : `search attributes not registered yet: ${missing.join(', ')}`;
  } catch (err) {
    return err instanceof Error ? err.message.split('\n')[0] : String(err);
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * A port free right now on 127.0.0.1, for a server started a little later.
 * It is drawn below the range the OS hands out as the local ports of
 * outgoing connections (and to `listen(0)`): a port from that range can be
 * taken by any connection in the meantime, and under a busy test run it was
 * (EADDRINUSE seconds later). Drawn at random and tried by binding it; where
 * the OS leaves no such room, the OS picks one.
 */
export async function freePort(avoid: number[] = []): Promise<number> {
  const [low, high] = [FIXED_PORTS_FROM, ephemeralPortsFrom()];
  for (let attempt = 0; high - low > 1_000 && attempt < 50; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (!avoid.includes(port) && (await bindable(port))) return port;
  }
  for (;;) {
    const port = await bindable(0);
    if (port && !avoid.includes(port)) return port;
  }
}

/** The lowest port a free-port draw uses: above the well-known and common service ports. */
const FIXED_PORTS_FROM = 20_000;

/** Where the OS's range of ephemeral ports begins (Linux: ip_local_port_range; elsewhere the IANA 49152). */
function ephemeralPortsFrom(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 49_152;
  } catch {
    return 49_152;
  }
}

/** Binds the port (0: any) on 127.0.0.1 and releases it: the port bound, or undefined if it was taken. */
function bindable(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, HOST, () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Keeps only the last `limit` characters of a stream. */
class Tail {
  private buffer = '';
  constructor(private readonly limit: number) {}
  push(chunk: Buffer): void {
    this.buffer = (this.buffer + chunk.toString('utf8')).slice(-this.limit);
  }
  text(): string {
    return this.buffer.trim();
  }
}
