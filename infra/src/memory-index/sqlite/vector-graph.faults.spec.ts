import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillVolume, mountSmallVolume, smallVolumesUnsupported } from '../../../../tests/faults/small-volume';
import { storageFullOf } from '@elma/shared';
import { VectorGraph } from './vector-graph';

const unsupported = smallVolumesUnsupported('a vector graph saved onto a full volume');

const vector = (seed: number) => Float32Array.from({ length: 64 }, (_, i) => Math.sin(seed * 31 + i));

describe.skipIf(unsupported !== undefined)('a vector graph saved onto a full volume', () => {
  const base = mkdtempSync(join(tmpdir(), 'elma-graph-full-'));
  const dir = join(base, 'index');
  let unmount = () => {};

  beforeAll(() => {
    const mounted = mountSmallVolume(dir, 2);
    if ('reason' in mounted) throw new Error(mounted.reason);
    unmount = mounted.unmount;
  });
  afterAll(() => {
    unmount();
    rmSync(base, { recursive: true, force: true });
  });

  it('fails as a full volume, leaves no torn temporary file and keeps the graph saved before', () => {
    const path = join(dir, 'tenant-acme.usearch');
    const graph = new VectorGraph(64);
    graph.add([1, 2, 3], [vector(1), vector(2), vector(3)]);
    graph.save(path);
    fillVolume(dir);
    const keys = Array.from({ length: 5_000 }, (_, i) => i + 10);
    graph.add(keys, keys.map(vector));

    let error: unknown;
    try {
      graph.save(path);
    } catch (caught) {
      error = caught;
    }
    expect(storageFullOf(error)?.code).toBe('STORAGE.FULL');
    expect(existsSync(`${path}.tmp`)).toBe(false);
    const reloaded = new VectorGraph(64);
    expect(reloaded.load(path, 0)).toBe(true);
    expect(reloaded.size).toBe(3);
  });
});
