// Plain JavaScript: read by the `elma` bin (./elma.mjs) before anything else is loaded, written by
// scripts/build.mjs at the end of a build.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';

/** Written beside elma.mjs, last: what the build was made from, and when it started reading it. */
export const INPUTS_FILE = 'inputs.json';

/**
 * Records the files a build in `outdir` was made from (absolute, or relative to `root`) and the time it began.
 * @param {string} outdir
 * @param {string} root
 * @param {number} startedAt ms since the epoch, taken before the build read its first file
 * @param {Iterable<string>} files
 */
export function writeInputs(outdir, root, startedAt, files) {
  const names = [...new Set([...files].map((file) => (isAbsolute(file) ? relative(root, file) : file)))].sort();
  writeFileSync(join(outdir, INPUTS_FILE), `${JSON.stringify({ startedAt, files: names }, null, 1)}\n`);
}

/**
 * Whether the build in `outdir` is current: it finished (its inputs file is written last) and none of the
 * files it was made from changed (or went away) since it started reading them. One `stat` a file, a few
 * hundred files: a millisecond or two, cheap enough for every command. A file that is new and imported by
 * nothing old cannot matter; one that something imports means that something changed too.
 * @param {string} outdir
 * @param {string} root
 * @returns {{ current: true } | { current: false; reason: string }}
 */
export function buildState(outdir, root) {
  /** @type {{ startedAt: number; files: string[] }} */
  let inputs;
  try {
    inputs = JSON.parse(readFileSync(join(outdir, INPUTS_FILE), 'utf8'));
  } catch {
    return { current: false, reason: `no finished build in ${relative(root, outdir) || '.'}` };
  }
  for (const file of inputs.files) {
    let mtime;
    try {
      mtime = statSync(join(root, file)).mtimeMs;
    } catch {
      return { current: false, reason: `${file} is gone since the build` };
    }
    if (mtime > inputs.startedAt) return { current: false, reason: `${file} changed since the build` };
  }
  return { current: true };
}
