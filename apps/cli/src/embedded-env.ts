import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '@elma/infra';

/**
 * The environment of an `elma start` on its own data folder and free ports,
 * with a Temporal dev server of its own: an address or database file of
 * another Temporal server in this environment is left out.
 */
export async function embeddedStartEnv(
  dataDir: string,
  logLevel = 'warn',
): Promise<{ env: NodeJS.ProcessEnv; port: number; temporalPort: number }> {
  const port = await freePort();
  const temporalPort = await freePort([port]);
  const uiPort = await freePort([port, temporalPort]);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ELMA_DATA_DIR: dataDir,
    ELMA_PORT: String(port),
    TEMPORAL_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(uiPort),
    ELMA_LOG_LEVEL: logLevel,
  };
  delete env.TEMPORAL_ADDRESS;
  delete env.ELMA_TEMPORAL_DB_FILE;
  return { env, port, temporalPort };
}

export interface StartedElma {
  child: ChildProcess;
  /** What it printed (stdout and stderr), the last 100,000 characters. */
  output(): string;
  /** Ctrl-C, as a person would; SIGKILL if it has not ended after the grace period. */
  stop(): Promise<void>;
}

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

const BIN = fileURLToPath(new URL('../bin/elma.mjs', import.meta.url));

/** Node arguments that run the `elma` CLI from the sources under tsx. */
export const sourceElmaArgs = (...args: string[]): string[] => ['--import', 'tsx', MAIN, ...args];

/**
 * Node arguments that run the `elma` bin, as `npx elma` and `npm start` do: the build when it is current (`npm
 * install` makes it), else the sources under tsx. A child started so starts in a fraction of the sources' time,
 * with the workflows bundled in advance.
 */
export const binElmaArgs = (...args: string[]): string[] => [BIN, ...args];

/**
 * Node arguments that run `elma` the way this process runs: the same entry (the sources under tsx, or the
 * build's dist/elma.mjs) with the same Node flags, e.g. for a command that starts another `elma`.
 */
export const thisElmaArgs = (...args: string[]): string[] => [...process.execArgv, process.argv[1]!, ...args];

/**
 * Runs `elma start` in a child process with `env` (see embeddedStartEnv; `elmaArgs` picks the entry, the
 * bin unless told otherwise) and
 * resolves once it serves (its banner's last line), or throws with what it
 * printed when it exits or does not come up in time. `onOutput` sees every
 * chunk as it arrives.
 */
export async function spawnElmaStart(
  env: NodeJS.ProcessEnv,
  options: {
    readyTimeoutMs?: number;
    stopGraceMs?: number;
    onOutput?: (chunk: string) => void;
    elmaArgs?: (...args: string[]) => string[];
  } = {},
): Promise<StartedElma> {
  const { readyTimeoutMs = 90_000, stopGraceMs = 15_000, onOutput, elmaArgs = binElmaArgs } = options;
  const child = spawn(process.execPath, elmaArgs('start'), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-100_000);
    onOutput?.(chunk.toString('utf8'));
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (const deadline = Date.now() + readyTimeoutMs; !output.includes('Press Ctrl-C to stop.');) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`elma start exited early:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`elma start did not come up in ${readyTimeoutMs / 1000} s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), stopGraceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
