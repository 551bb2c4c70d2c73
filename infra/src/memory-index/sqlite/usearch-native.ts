import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * usearch's native index (its N-API class `CompiledIndex`), called without
 * the package's JS wrapper: the wrapper converts every vector to f32 before
 * the native code sees it, and usearch's own f32-to-i8 cast scales a vector
 * to unit length and truncates (most components of a 384-dimensional vector
 * end up within ±10). Called directly, the native index takes int8 vectors
 * as they are. The methods are those of the wrapper's `Index`, on flat typed
 * arrays; the file format is the same.
 */
export interface NativeIndex {
  dimensions(): number;
  size(): number;
  capacity(): number;
  /** Vectors flattened row after row, one per key; 0 threads: as many as the machine's cores. */
  add(keys: BigUint64Array, vectors: Float32Array | Int8Array, threads: number): void;
  /** Keys, distances and, per query, how many of its `k` slots were filled. */
  search(queries: Float32Array | Int8Array, k: number, threads: number): [BigUint64Array, Float32Array, BigUint64Array];
  remove(keys: BigUint64Array): number[];
  contains(keys: BigUint64Array): boolean[];
  save(path: string): void;
  load(path: string): void;
}

export interface NativeIndexConfig {
  dimensions: number;
  metric: 'cos';
  quantization: 'f32' | 'f16' | 'i8';
  connectivity: number;
  expansionAdd: number;
  expansionSearch: number;
}

type CompiledIndex = new (
  dimensions: number,
  metric: string,
  quantization: string,
  connectivity: number,
  expansionAdd: number,
  expansionSearch: number,
  multi: boolean,
) => NativeIndex;

let compiled: CompiledIndex | undefined;

/** A new, empty native index (the binary usearch installed for this platform, loaded once). */
export function nativeIndex(config: NativeIndexConfig): NativeIndex {
  if (!compiled) {
    const require = createRequire(import.meta.url);
    // The loader usearch itself uses; the package's entry is javascript/dist/cjs/usearch.js, its binaries sit at its root.
    const load = require('node-gyp-build') as (root: string) => { CompiledIndex: CompiledIndex };
    compiled = load(join(dirname(require.resolve('usearch')), '..', '..', '..')).CompiledIndex;
  }
  return new compiled(
    config.dimensions,
    config.metric,
    config.quantization,
    config.connectivity,
    config.expansionAdd,
    config.expansionSearch,
    false,
  );
}
