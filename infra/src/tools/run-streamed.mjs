// Plain JavaScript: used by the installers of the Temporal CLI and the embedding model, which the root postinstall
// runs with node alone.
import { spawn } from 'node:child_process';

/**
 * Runs a command with its output streamed to our stderr; keeps the tail of its stderr for the error.
 * @param {string} command
 * @param {string[]} args
 * @returns {Promise<{ ok: true } | { ok: false; reason: string }>}
 */
export function runStreamed(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    child.stdout.on('data', (chunk) => process.stderr.write(chunk));
    child.stderr.on('data', (chunk) => {
      process.stderr.write(chunk);
      tail = (tail + chunk.toString('utf8')).slice(-600);
    });
    child.on('error', (err) => resolve({ ok: false, reason: err.message }));
    child.on('close', (code) =>
      resolve(
        code === 0
          ? { ok: true }
          : { ok: false, reason: `exit code ${code}${tail ? `: ${tail.trim().split('\n').slice(-3).join(' | ')}` : ''}` },
      ),
    );
  });
}
