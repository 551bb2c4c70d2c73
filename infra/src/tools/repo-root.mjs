// Plain JavaScript: used by the installers of the Temporal CLI and the embedding model, which the root postinstall
// runs with node alone.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository (or installed image) root: the nearest folder above this module whose package.json is the
 * root `elma` one. Found by walking up, because this module runs from infra/src/tools/ (sources) and from
 * inside dist/elma.mjs (the build); the working directory when there is none.
 * @returns {string}
 */
export function findRepoRoot() {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    try {
      if (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name === 'elma') return dir;
    } catch {
      // No package.json here, or not JSON: keep walking up.
    }
    if (dirname(dir) === dir) return process.cwd();
  }
}
