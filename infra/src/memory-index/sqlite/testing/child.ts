import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Runs a TypeScript file of this folder in a new Node process (through tsx); returns how it ended. */
export function runChild(script: string, args: string[], timeoutMs = 60_000): { status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string } {
  const path = fileURLToPath(new URL(script, import.meta.url));
  const result = spawnSync(process.execPath, ['--import', 'tsx', path, ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}
