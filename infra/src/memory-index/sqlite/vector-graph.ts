import { existsSync, renameSync, rmSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { Index, MetricKind, ScalarKind } from 'usearch';

export interface VectorGraphOptions {
  /** Scalar type of the graph's copy of each vector. Exact scores always come from the stored f32 vectors. */
  quantization?: 'f32' | 'f16' | 'i8';
  /** HNSW M: edges per node. */
  connectivity?: number;
  /** HNSW ef_construction. */
  expansionAdd?: number;
  /** HNSW ef_search (usearch uses at least k). */
  expansionSearch?: number;
}

/** Keys for scrub's throwaway vectors: far above any SQLite rowid (at most 2^63 - 1 but in practice < 2^53). */
const SCRUB_KEY_BASE = 1n << 60n;

/**
 * A tenant's HNSW graph (usearch), keyed by the memories table's rowid. The
 * graph is a cache of the stored vectors: it can always be rebuilt from them.
 * usearch removals are soft (the vector bytes of a removed key stay in the
 * graph and in its saved file), so purge scrubs them (see `scrub`).
 */
export class VectorGraph {
  private index: Index;

  constructor(
    private readonly dimensions: number,
    private readonly options: VectorGraphOptions = {},
  ) {
    this.index = this.create();
  }

  get size(): number {
    return this.index.size();
  }

  /** Adds vectors, flattened row after row. Zero vectors are skipped: they have no direction to search by. */
  add(keys: number[], vectors: Float32Array[]): void {
    const kept: number[] = [];
    const flat = new Float32Array(vectors.length * this.dimensions);
    vectors.forEach((vector, i) => {
      if (!vector.some((x) => x !== 0)) return;
      flat.set(vector, kept.length * this.dimensions);
      kept.push(keys[i]);
    });
    if (kept.length === 0) return;
    this.index.add(
      BigUint64Array.from(kept, (k) => BigInt(k)),
      flat.subarray(0, kept.length * this.dimensions),
      0,
    );
  }

  remove(keys: number[]): void {
    const present = keys.filter((k) => this.index.contains(BigInt(k)) === true);
    if (present.length > 0) this.index.remove(BigUint64Array.from(present, (k) => BigInt(k)));
  }

  /**
   * Removes nodes and overwrites their vector bytes without rebuilding the
   * graph: usearch keeps a removed node's vector in its slot and hands freed
   * slots to the next additions, so as many throwaway random vectors are
   * added under reserved keys (above any rowid) and removed again. The
   * caller checks the saved file and rebuilds if a byte survived anyway.
   */
  scrub(keys: number[]): void {
    const present = keys.filter((k) => this.index.contains(BigInt(k)) === true);
    if (present.length === 0) return;
    this.index.remove(BigUint64Array.from(present, (k) => BigInt(k)));
    const filler = new Float32Array(present.length * this.dimensions);
    for (let i = 0; i < filler.length; i++) filler[i] = Math.random() - 0.5;
    const reserved = BigUint64Array.from(present, (_, i) => SCRUB_KEY_BASE + BigInt(i));
    this.index.add(reserved, filler, 0);
    this.index.remove(reserved);
  }

  /** Approximate nearest keys, best first. */
  search(query: Float32Array, k: number): number[] {
    return this.searchWithCosine(query, k).map((m) => m.key);
  }

  /**
   * Approximate nearest keys with their cosine similarity. The graph stores
   * f32 vectors, so the similarity of each returned key is exact; only the
   * candidate set is approximate.
   */
  searchWithCosine(query: Float32Array, k: number): { key: number; cosine: number }[] {
    const size = this.index.size();
    if (size === 0) return [];
    // One thread: a single query gains nothing from a pool, and the caller runs many in parallel.
    const matches = this.index.search(query, Math.min(k, size), 1);
    return Array.from(matches.keys, (key, i) => ({ key: Number(key), cosine: 1 - matches.distances[i] }));
  }

  /** Drops every node, including the soft-removed ones' bytes, and starts over. */
  reset(): void {
    this.index = this.create();
  }

  /** Writes the graph to `path` through a temporary file, so a crash never leaves a torn graph under the real name. */
  save(path: string): void {
    const temporary = `${path}.tmp`;
    try {
      this.index.save(temporary);
    } catch (error) {
      // usearch reports a failed write without the system error: a volume left without space is told apart here.
      const { bavail, bsize } = statfsSync(dirname(path));
      // A torn temporary file would hold on to the very space that ran out.
      rmSync(temporary, { force: true });
      if (bavail * bsize < 1024 * 1024) throw Object.assign(new Error('no space left to save the vector graph'), { code: 'ENOSPC', cause: error });
      throw error;
    }
    renameSync(temporary, path);
  }

  /** Loads a saved graph; false when the file is missing or unreadable (the caller rebuilds). */
  load(path: string): boolean {
    if (!existsSync(path)) return false;
    const loaded = this.create();
    try {
      loaded.load(path);
    } catch {
      rmSync(path, { force: true });
      return false;
    }
    if (loaded.dimensions() !== this.dimensions) return false;
    this.index = loaded;
    return true;
  }

  private create(): Index {
    return new Index({
      dimensions: this.dimensions,
      metric: MetricKind.Cos,
      quantization: (this.options.quantization ?? 'f32') as ScalarKind,
      connectivity: this.options.connectivity ?? 16,
      expansion_add: this.options.expansionAdd ?? 16,
      expansion_search: this.options.expansionSearch ?? 64,
      multi: false,
    });
  }
}
