// `node --import <this file> …`: writes every module the process loads to the file ELMA_RECORD_LOADS names, one
// a line, when it exits: ES modules as their resolved URLs (recorded by ./record-loads-hooks.mjs) and CommonJS
// modules as their file names (Node's module cache, which also holds the CommonJS packages ES modules import).
// For the tests of what each `elma` command loads (apps/cli/src/command-loading.e2e.spec.ts).
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';

const out = process.env.ELMA_RECORD_LOADS;
if (out) {
  register('./record-loads-hooks.mjs', import.meta.url, { data: { out } });
  process.on('exit', () => {
    const cached = Object.keys(/** @type {{ _cache: Record<string, unknown> }} */ (/** @type {unknown} */ (Module))._cache);
    appendFileSync(out, cached.map((file) => `${file}\n`).join(''));
  });
}
