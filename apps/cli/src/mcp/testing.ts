import { spawn } from 'node:child_process';
import { join } from 'node:path';

const main = join(import.meta.dirname, '..', 'main.ts');

/** `elma mcp --http --port 0 ...args` as a real child process in `env`; resolves with the URL it prints once it listens. */
export async function startMcpHttp(env: Record<string, string>, args: string[] = []): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', main, 'mcp', '--http', '--port', '0', ...args], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const found = /streamable HTTP at (\S+),/.exec(stderr);
      if (found) resolve(found[1]);
    });
    child.once('exit', (code) => reject(new Error(`elma mcp --http exited ${code}: ${stderr}`)));
  });
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
