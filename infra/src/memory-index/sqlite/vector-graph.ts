import { existsSync, mkdtempSync, renameSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { nativeIndex, type NativeIndex } from './usearch-native';
import { int8Components, quantise, QUANTISED_SCALE_BYTES } from './vectors';

export type GraphScalar = 'f32' | 'f16' | 'i8';

export interface VectorGraphOptions {
  /** Scalar type of the graph's copy of each vector; default DEFAULT_QUANTIZATION. */
  quantization?: GraphScalar;
  /** HNSW M: edges per node. */
  connectivity?: number;
  /** HNSW ef_construction; default DEFAULT_EXPANSION_ADD. */
  expansionAdd?: number;
  /** HNSW ef_search (usearch uses at least k); default DEFAULT_EXPANSION_SEARCH. */
  expansionSearch?: number;
}

/**
 * HNSW ef_construction. 16 (usearch's own default, ELMA's until issue 15)
 * built graphs that lost dense recall on real (e5) vectors: LoCoMo R@10 .518
 * exact, .467 through the graph; 128 recovers it (.514; graph recall@10 vs
 * exact .947 with 16, .994 with 128, at ef_search 64). A graph file records what
 * it was built with, and one built with another value is rebuilt when its
 * partition opens (TenantPartition.openGraph).
 */
export const DEFAULT_EXPANSION_ADD = 128;

/**
 * HNSW ef_search, chosen by measured recall@10 against exact search
 * (`measureGraphRecall`) on 3,066 e5 passage vectors and 1,052 query vectors
 * (LoCoMo dev half), ef_construction 128: ef_search 16 / 32 / 64 / 128 gave
 * .909 / .971 / .994 / .999 asking the graph for 10, and .99 throughout
 * asking for 64 as the dense route does (GRAPH_DEPTHS; usearch searches with
 * max(k, ef_search)). 64 keeps small-k callers near exact for half the work of 128.
 */
export const DEFAULT_EXPANSION_SEARCH = 64;

/**
 * The graph keeps its copy of each vector as i8: the very int8 components the
 * row stores (see `int8Components`), a quarter of f32's bytes in the file and
 * in memory. Cosine ignores each vector's scale, so the graph's cosines are
 * those of the rows' vectors; the query is encoded the same way. Measured on
 * LoCoMo's dev half (e5, `eval:locomo`), against the f16 graph it replaced:
 * dense-route R@10 .524 vs .521, fused + smoothing R@10 .706 vs .706, R@5
 * .620 vs .623. usearch's own cast to i8 (to unit length, × 127, truncated:
 * most components of a 384-dimensional vector end up within ±10) is never
 * used: the graph is given the components (see `nativeIndex`). A graph file
 * records its scalar type and one of another type is rebuilt when its
 * partition opens.
 */
export const DEFAULT_QUANTIZATION: GraphScalar = 'i8';

/** Bytes per component of each scalar type, also the code a partition records its graph's type by. */
export const SCALAR_BYTES: Record<GraphScalar, number> = { f32: 4, f16: 2, i8: 1 };

/**
 * The bytes a graph of `scalar` type holds `vector` as, for a byte scan to
 * look for: usearch converts f32 to IEEE half with rounding to nearest even,
 * as here; an i8 graph holds the vector's int8 components as given.
 */
export function graphVectorBytes(vector: Float32Array, scalar: GraphScalar): Buffer {
  if (scalar === 'f32') return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
  if (scalar === 'i8') return Buffer.from(int8Components(vector).components.buffer);
  const out = Buffer.alloc(vector.length * 2);
  vector.forEach((x, i) => out.writeUInt16LE(toHalf(x), i * 2));
  return out;
}

/**
 * The byte forms in which a partition's files hold `vector`: the graph's, in
 * its scalar type, and the row's int8 components (its scale may differ by a
 * bit). With an i8 graph the two are the same bytes, looked for once.
 */
export function storedVectorForms(vector: Float32Array, scalar: GraphScalar): Buffer[] {
  const graph = graphVectorBytes(vector, scalar);
  const row = quantise(vector).subarray(QUANTISED_SCALE_BYTES);
  return graph.equals(row) ? [graph] : [graph, row];
}

const FLOAT = new Float32Array(1);
const FLOAT_BITS = new Uint32Array(FLOAT.buffer);

/** IEEE 754 binary16 bits of a float32, rounded to nearest even (overflow to infinity, underflow through subnormals). */
function toHalf(value: number): number {
  FLOAT[0] = value;
  const bits = FLOAT_BITS[0];
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  const half = exponent - 112;
  if (half >= 0x1f) return sign | 0x7c00;
  const roundEven = (kept: number, rest: number, halfway: number) => (rest > halfway || (rest === halfway && kept & 1) ? kept + 1 : kept);
  if (half > 0) return sign | roundEven((half << 10) | (mantissa >>> 13), mantissa & 0x1fff, 0x1000);
  if (half < -10) return sign;
  const shift = 14 - half;
  const full = mantissa | 0x800000;
  return sign | roundEven(full >>> shift, full & ((1 << shift) - 1), 1 << (shift - 1));
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
  private index: NativeIndex;
  /**
   * Soft-removed slots since the graph was last built from scratch. usearch
   * keeps them in memory and in the saved file; past a share of them the
   * partition rebuilds the graph (see TenantPartition).
   */
  private removedSlots = 0;

  constructor(
    private readonly dimensions: number,
    private readonly options: VectorGraphOptions = {},
  ) {
    this.index = this.create();
  }

  /** The ef_construction this graph builds with. */
  get expansionAdd(): number {
    return this.options.expansionAdd ?? DEFAULT_EXPANSION_ADD;
  }

  /** The scalar type of the graph's vectors. */
  get quantization(): GraphScalar {
    return this.options.quantization ?? DEFAULT_QUANTIZATION;
  }

  /** The ef_search this graph searches with. */
  get expansionSearch(): number {
    return this.options.expansionSearch ?? DEFAULT_EXPANSION_SEARCH;
  }

  get size(): number {
    return this.index.size();
  }

  /** Soft-removed slots still held by the graph. */
  get removed(): number {
    return this.removedSlots;
  }

  /** The share of the graph's slots that are soft-removed (0 for an empty graph). */
  get removedShare(): number {
    const slots = this.index.size() + this.removedSlots;
    return slots === 0 ? 0 : this.removedSlots / slots;
  }

  /**
   * An estimate of the bytes the graph holds in memory: per allocated slot its
   * vector, its base-layer links (2M 32-bit slots) and a node header. The JS
   * binding reports no figure of its own.
   */
  get memoryBytes(): number {
    const scalar = SCALAR_BYTES[this.quantization];
    const connectivity = this.options.connectivity ?? 16;
    return Number(this.index.capacity()) * (this.dimensions * scalar + connectivity * 2 * 4 + 48);
  }

  /** Adds vectors, flattened row after row. Zero vectors are skipped: they have no direction to search by. */
  add(keys: number[], vectors: Float32Array[]): void {
    const kept = vectors.flatMap((vector, i) => (vector.some((x) => x !== 0) ? [i] : []));
    if (kept.length === 0) return;
    this.index.add(
      BigUint64Array.from(kept, (i) => BigInt(keys[i])),
      this.encode(kept.map((i) => vectors[i])),
      0,
    );
  }

  /** Vectors flattened row after row as the graph takes them: int8 components for an i8 graph (see DEFAULT_QUANTIZATION), else f32. */
  private encode(vectors: Float32Array[]): Float32Array | Int8Array {
    if (this.quantization !== 'i8') {
      const flat = new Float32Array(vectors.length * this.dimensions);
      vectors.forEach((vector, i) => flat.set(vector, i * this.dimensions));
      return flat;
    }
    const flat = new Int8Array(vectors.length * this.dimensions);
    vectors.forEach((vector, i) => flat.set(int8Components(vector).components, i * this.dimensions));
    return flat;
  }

  private contains(keys: number[]): number[] {
    const found = this.index.contains(BigUint64Array.from(keys, (k) => BigInt(k)));
    return keys.filter((_, i) => found[i]);
  }

  remove(keys: number[]): void {
    const present = this.contains(keys);
    if (present.length === 0) return;
    this.index.remove(BigUint64Array.from(present, (k) => BigInt(k)));
    this.removedSlots += present.length;
  }

  /**
   * Removes nodes and overwrites their vector bytes without rebuilding the
   * graph: usearch keeps a removed node's vector in its slot and hands freed
   * slots to the next additions, so as many throwaway random vectors are
   * added under reserved keys (above any rowid) and removed again. The
   * caller checks the saved file and rebuilds if a byte survived anyway.
   */
  scrub(keys: number[]): void {
    const present = this.contains(keys);
    if (present.length === 0) return;
    this.index.remove(BigUint64Array.from(present, (k) => BigInt(k)));
    // The fillers take the freed slots and are removed again: the count of removed slots grows by the nodes only.
    this.removedSlots += present.length;
    const filler = present.map(() => Float32Array.from({ length: this.dimensions }, () => Math.random() - 0.5));
    const reserved = BigUint64Array.from(present, (_, i) => SCRUB_KEY_BASE + BigInt(i));
    this.index.add(reserved, this.encode(filler), 0);
    this.index.remove(reserved);
  }

  /** Approximate nearest keys, best first. */
  search(query: Float32Array, k: number): number[] {
    return this.searchWithCosine(query, k).map((m) => m.key);
  }

  /**
   * Approximate nearest keys with their cosine similarity, computed on the
   * graph's copy of the vectors (by default the rows' own int8 components,
   * the query encoded alike); the candidate set is approximate.
   */
  searchWithCosine(query: Float32Array, k: number): { key: number; cosine: number }[] {
    const size = this.index.size();
    if (size === 0) return [];
    // One thread: a single query gains nothing from a pool, and the caller runs many in parallel.
    const [keys, distances, counts] = this.index.search(this.encode([query]), Math.min(k, size), 1);
    return Array.from(keys.subarray(0, Number(counts[0])), (key, i) => ({ key: Number(key), cosine: 1 - distances[i] }));
  }

  /** Drops every node, including the soft-removed ones' bytes, and starts over. */
  reset(): void {
    release(this.index, this.dimensions);
    this.index = this.create();
    this.removedSlots = 0;
  }

  /** Frees the graph's native memory now; the graph is empty afterwards. */
  release(): void {
    release(this.index, this.dimensions);
    this.removedSlots = 0;
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
      if (bavail * bsize < 1024 * 1024)
        throw Object.assign(new Error('no space left to save the vector graph'), { code: 'ENOSPC', cause: error });
      throw error;
    }
    renameSync(temporary, path);
  }

  /**
   * Loads a saved graph; false when the file is missing or unreadable (the
   * caller rebuilds). usearch trusts the file's bytes: a truncated or
   * overwritten file can abort the whole process inside the native loader,
   * so only a file whose digest the caller checked may be passed here.
   */
  load(path: string, removed: number): boolean {
    if (!existsSync(path)) return false;
    const loaded = this.create();
    try {
      loaded.load(path);
    } catch {
      release(loaded, this.dimensions);
      rmSync(path, { force: true });
      return false;
    }
    if (loaded.dimensions() !== this.dimensions) {
      release(loaded, this.dimensions);
      return false;
    }
    release(this.index, this.dimensions);
    this.index = loaded;
    this.removedSlots = removed;
    return true;
  }

  private create(): NativeIndex {
    return nativeIndex({
      dimensions: this.dimensions,
      metric: 'cos',
      quantization: this.quantization,
      connectivity: this.options.connectivity ?? 16,
      expansionAdd: this.expansionAdd,
      expansionSearch: this.expansionSearch,
    });
  }
}

/**
 * Frees an index's native memory at once. The binding's objects keep their
 * memory when they are garbage-collected (measured: 30 graphs opened and
 * dropped in turn kept 661 MB of RSS, with or without gc()), so a graph that
 * is replaced or closed is emptied by loading an empty file into it (91 MB).
 * The empty file is written to a temporary folder and removed at once: a
 * process killed later leaves nothing behind.
 */
function release(index: NativeIndex, dimensions: number): void {
  let folder: string | undefined;
  try {
    folder = mkdtempSync(join(tmpdir(), 'elma-graph-'));
    const empty = join(folder, `empty-${dimensions}.usearch`);
    nativeIndex({ dimensions, metric: 'cos', quantization: 'f32', connectivity: 2, expansionAdd: 2, expansionSearch: 2 }).save(empty);
    index.load(empty);
  } catch {
    // Nothing more can be done than to drop the reference; the process stays correct, only larger.
  } finally {
    if (folder) rmSync(folder, { recursive: true, force: true });
  }
}
