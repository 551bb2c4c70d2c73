import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs a mount-related command as root: directly when we are root, else through a password-less sudo (CI runners). */
function privileged(command: string, args: string[]) {
  const root = process.getuid?.() === 0;
  return spawnSync(root ? command : 'sudo', root ? args : ['-n', command, ...args], { encoding: 'utf8' });
}

/**
 * A real, size-capped file system, owned by this process's user: a tmpfs
 * where mounting one is permitted, else an ext4 image on a loop device.
 * The reason instead when neither can be mounted here (no root, no sudo).
 */
export function mountSmallVolume(dir: string, megabytes: number): { unmount(): void } | { reason: string } {
  mkdirSync(dir, { recursive: true });
  const owner = `uid=${process.getuid?.() ?? 0},gid=${process.getgid?.() ?? 0}`;
  const tmpfs = privileged('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m,mode=0700,${owner}`, 'tmpfs', dir]);
  if (tmpfs.status === 0) return { unmount: () => void privileged('umount', ['-l', dir]) };
  const image = `${dir}.img`;
  const made =
    spawnSync('truncate', ['-s', `${megabytes}M`, image]).status === 0 &&
    spawnSync('mkfs.ext4', ['-q', '-F', image]).status === 0 &&
    privileged('mount', ['-o', 'loop', image, dir]).status === 0;
  if (made) {
    privileged('chown', [`${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`, dir]);
    return {
      unmount: () => {
        privileged('umount', ['-l', dir]);
        rmSync(image, { force: true });
      },
    };
  }
  rmSync(image, { force: true });
  return { reason: `cannot mount a tmpfs (${(tmpfs.stderr || '').trim() || `exit ${tmpfs.status}`}) nor a loop-mounted ext4 image here` };
}

/**
 * Why small volumes cannot be mounted here, or undefined when they can. Asked
 * while a suite is collected, so that it is skipped with the reason printed
 * rather than failed.
 */
export function smallVolumesUnsupported(suite: string): string | undefined {
  const probe = mkdtempSync(join(tmpdir(), 'elma-mount-probe-'));
  const mounted = mountSmallVolume(join(probe, 'v'), 1);
  if ('unmount' in mounted) mounted.unmount();
  rmSync(probe, { recursive: true, force: true });
  if ('reason' in mounted) process.stderr.write(`[faults] skipped "${suite}": ${mounted.reason}\n`);
  return 'reason' in mounted ? mounted.reason : undefined;
}

/** Writes a filler file until the volume refuses another byte (ENOSPC), as a runaway log file would. */
export function fillVolume(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  try {
    for (const size of [1 << 20, 1 << 12, 1]) {
      const chunk = Buffer.alloc(size, 0x5a);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as { code?: string }).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}
