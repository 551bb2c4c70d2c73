import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/**
 * Child processes for tests whose fault ends a process (a native abort, a
 * kill -9): the test observes the child from outside. Scripts are
 * TypeScript files run through tsx, named by URL
 * (`new URL('./testing/x.child.ts', import.meta.url)`).
 */
const scriptPath = (script: URL) => fileURLToPath(script);

/** Runs a TypeScript file in a new Node process (through tsx) to its end; returns how it ended. */
export function runChild(
  script: URL,
  args: string[],
  timeoutMs = 60_000,
): { status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', scriptPath(script), ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}

/** Starts a TypeScript file in a new Node process and resolves once it printed a line matching `ready`. */
export async function startChild(
  script: URL,
  args: string[],
  ready: RegExp,
  timeoutMs = 60_000,
): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', scriptPath(script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child did not get ready: ${stderr.slice(0, 500)}`)), timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = stdout.split('\n').find((l) => ready.test(l));
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    child.on(
      'exit',
      (code, signal) => (
        clearTimeout(timer),
        reject(new Error(`child exited (${code ?? signal}) before it was ready: ${stderr.slice(0, 500)}`))
      ),
    );
  });
  return { child, line };
}

/** Kills a child with SIGKILL and waits for it to be gone. */
export async function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/**
 * Starts a TypeScript file that prints `started` when it begins the work under test and `finished` when it is done,
 * kills it with SIGKILL `afterMs` after `started`, and resolves once it is gone: whether it had printed `finished`.
 */
export function killDuring(
  script: URL,
  args: string[],
  afterMs: number,
  markers = { started: 'opening', finished: 'opened' },
): Promise<boolean> {
  const child = spawn(process.execPath, ['--import', 'tsx', scriptPath(script), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  return new Promise((resolve) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (chunk.toString().includes(markers.started)) setTimeout(() => child.kill('SIGKILL'), afterMs);
    });
    child.once('exit', () => resolve(output.includes(markers.finished)));
  });
}
