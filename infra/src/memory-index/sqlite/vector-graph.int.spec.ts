import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { graphVectorBytes, VectorGraph } from './vector-graph';
import { dequantise, QUANTISED_SCALE_BYTES, quantise } from './vectors';
import { runChild } from '@elma/shared/testing';

/** A deterministic pseudo-random vector (mulberry32), for graph tests. */
function prngVector(dimensions: number, seed: number): Float32Array {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
  return Float32Array.from({ length: dimensions }, next);
}

describe('VectorGraph.scrub', () => {
  const dir = mkdtempSync(join(tmpdir(), 'elma-graph-'));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('removes nodes and leaves none of their vector bytes in the saved graph, keeping the rest searchable', () => {
    const graph = new VectorGraph(64);
    const vectors = Array.from({ length: 3_000 }, (_, i) => prngVector(64, i + 1));
    graph.add(
      vectors.map((_, i) => i + 1),
      vectors,
    );
    const gone = Array.from({ length: 300 }, (_, i) => i * 10 + 1);
    const path = join(dir, 'graph.usearch');

    // A soft removal alone leaves the bytes: this is what scrub exists for.
    const soft = new VectorGraph(64);
    soft.add(
      vectors.map((_, i) => i + 1),
      vectors,
    );
    soft.remove(gone);
    soft.save(path);
    // The bytes as the graph holds them (i8 by default), computed as a byte scan computes them.
    const held = (k: number) => graphVectorBytes(vectors[k - 1], graph.quantization);
    expect(gone.filter((k) => readFileSync(path).includes(held(k))).length).toBeGreaterThan(0);

    graph.scrub(gone);
    graph.save(path);
    const file = readFileSync(path);
    expect(gone.filter((k) => file.includes(held(k)))).toEqual([]);
    expect(graph.size).toBe(2_700);
    const kept = 2;
    expect(graph.searchWithCosine(vectors[kept - 1], 1)[0]).toMatchObject({ key: kept });
    for (const k of gone.slice(0, 20)) expect(graph.search(vectors[k - 1], 10)).not.toContain(k);
    expect(graph.search(vectors[0], 3_000).every((k) => k < 1e15)).toBe(true);
  });
});

describe('graphVectorBytes', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'elma-graph-bytes-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // A byte scan that computed other bytes than usearch writes would find nothing, and pass, whatever the file held.
  it.each(['f32', 'f16', 'i8'] as const)(
    'computes the very bytes a %s graph file holds for each vector, tiny and large components alike',
    (scalar) => {
      const graph = new VectorGraph(64, { quantization: scalar });
      const vectors = Array.from({ length: 200 }, (_, i) => prngVector(64, i + 1).map((x) => x * [1, 1e-3, 1e-5, 300][i % 4]));
      graph.add(
        vectors.map((_, i) => i + 1),
        vectors,
      );
      const path = join(dir, `${scalar}.usearch`);
      graph.save(path);
      const file = readFileSync(path);
      expect(vectors.filter((v) => !file.includes(graphVectorBytes(v, scalar)))).toEqual([]);
      graph.release();
    },
  );

  // The erasure's byte scan computes an i8 graph's bytes from the row's dequantised vector: they must be the row's own.
  it('gives, for an i8 graph, the int8 components a row stores, also from the row read back', () => {
    const vectors = Array.from({ length: 500 }, (_, i) => prngVector(384, i + 1).map((x) => x * [1, 1e-4, 7, 0.05][i % 4]));
    for (const vector of vectors) {
      const row = quantise(vector);
      const components = row.subarray(QUANTISED_SCALE_BYTES);
      expect(graphVectorBytes(vector, 'i8').equals(components)).toBe(true);
      expect(graphVectorBytes(dequantise(row, 384), 'i8').equals(components)).toBe(true);
    }
  });
});

describe('VectorGraph files', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'elma-graph-files-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // usearch 2.25.3 aborted the process (free(): corrupted unsorted chunks, exit 134) loading such files from 49 % on.
  it.each([0.3, 0.5, 0.75, 0.99])(
    'loads and searches a saved graph with %d of its nodes removed, without crashing the process',
    (share) => {
      const nodes = 2_000;
      const child = runChild(new URL('./testing/graph-reload.child.ts', import.meta.url), [
        join(dir, `graph-${share}.usearch`),
        String(nodes),
        String(share),
      ]);
      expect({ status: child.status, signal: child.signal, stderr: child.stderr.slice(0, 300) }).toEqual({
        status: 0,
        signal: null,
        stderr: '',
      });
      expect(child.stdout.trim()).toBe(`loaded ${nodes - Math.floor(nodes * share)}`);
    },
  );
});

describe('VectorGraph memory', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'elma-graph-memory-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('gives back the memory of a graph it replaces, so reloading a tenant again and again does not grow the process', () => {
    const dimensions = 384;
    const graph = new VectorGraph(dimensions);
    const vectors = Array.from({ length: 4_000 }, (_, i) => prngVector(dimensions, i + 1));
    graph.add(
      vectors.map((_, i) => i + 1),
      vectors,
    );
    const path = join(dir, 'graph.usearch');
    graph.save(path);
    graph.release();

    // Each load holds ~7 MB of graph; 30 loads that kept the replaced ones would hold ~200 MB.
    const reloaded = new VectorGraph(dimensions);
    reloaded.load(path, 0);
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 30; i++) expect(reloaded.load(path, 0)).toBe(true);
    expect(reloaded.size).toBe(4_000);
    expect((process.memoryUsage().rss - before) / 2 ** 20).toBeLessThan(40);
  });
});
