import { existsSync } from 'node:fs';
import { statfs } from 'node:fs/promises';

/** Free space below which a volume is reported down: 2 % of it, at most 64 MiB. */
export function lowWaterBytes(totalBytes: number): number {
  return Math.min(64 * 1024 * 1024, Math.floor(totalBytes * 0.02));
}

export interface VolumeHealth {
  up: boolean;
  volumes: Record<string, { freeBytes: number; totalBytes: number; lowWaterBytes: number }>;
}

/**
 * Free space of each folder ELMA writes to (the data folder, and the index
 * folder when the operator mounted it apart). Down while any is below its low
 * water mark: SQLite and the graph files then start failing with STORAGE.FULL,
 * and they resume by themselves once space is back above it.
 */
export async function volumeHealth(folders: Record<string, string>): Promise<VolumeHealth> {
  const volumes: VolumeHealth['volumes'] = {};
  for (const [name, folder] of Object.entries(folders)) {
    if (!existsSync(folder)) continue;
    const stats = await statfs(folder);
    const totalBytes = stats.blocks * stats.bsize;
    // bavail, not bfree: what an unprivileged process can still write (ext4 keeps a share for root).
    volumes[name] = { freeBytes: stats.bavail * stats.bsize, totalBytes, lowWaterBytes: lowWaterBytes(totalBytes) };
  }
  return { up: Object.values(volumes).every((v) => v.freeBytes >= v.lowWaterBytes), volumes };
}
