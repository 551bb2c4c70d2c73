import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RESTORE_MARKER_FILE } from '@elma/domain';

/** A restore's staging folder, `.restore-<hex>` at the top of the data folder (not the marker `.restore-in-progress`). */
export const RESTORE_STAGING_PREFIX = '.restore-';

/**
 * The temporary copies ELMA makes inside a data folder, each made by the
 * folder's owner (under the owner lock) and renamed into place or removed when
 * its step ends:
 * - `.restore-<hex>/`: a restore's staging, the backup's files (erased content included) before the swap;
 * - `index/tenant-*.usearch.tmp`: a vector graph being saved;
 * - `owner.json.tmp`, `temporal.pid.tmp`: the owner's and the Temporal dev server's records being written.
 * A process killed midway leaves one behind, and nothing else ever removes it,
 * so the next owner removes them all before it does anything else (see
 * claimDataDir). SQLite's own `-wal`/`-journal` files are not leftovers: SQLite
 * needs them to recover the database.
 */
function isLeftover(pathInDataDir: string): boolean {
  const [first, second, ...deeper] = pathInDataDir.split('/');
  if (deeper.length > 0 || first === undefined) return false;
  if (second === undefined) return (first.startsWith(RESTORE_STAGING_PREFIX) && first !== RESTORE_MARKER_FILE) || first.endsWith('.tmp');
  return first === 'index' && second.endsWith('.tmp');
}

/**
 * Removes the leftovers of `isLeftover` from a data folder and returns their
 * paths (relative to the folder; file names only, never content). Only the
 * folder's owner may call it: another process's step in progress would be
 * removed under it.
 */
export function removeLeftovers(dataDir: string): string[] {
  const removed: string[] = [];
  for (const folder of ['', 'index']) {
    const path = join(dataDir, folder);
    if (!existsSync(path)) continue;
    for (const name of readdirSync(path)) {
      const inDataDir = folder ? `${folder}/${name}` : name;
      if (!isLeftover(inDataDir)) continue;
      rmSync(join(dataDir, inDataDir), { recursive: true, force: true });
      removed.push(inDataDir);
    }
  }
  return removed;
}
