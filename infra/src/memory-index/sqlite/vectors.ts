import { dot } from '@elma/domain';

/** Float32 vectors as SQLite BLOBs, in the platform's (little-endian) byte order. */
export function toBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** A fresh Float32Array copy of a BLOB (SQLite buffers need not be 4-byte aligned). */
export function fromBlob(blob: Buffer): Float32Array {
  const out = new Float32Array(blob.byteLength / 4);
  new Uint8Array(out.buffer).set(blob);
  return out;
}

/** Bytes before the int8 components of a quantised vector: its float32 scale. */
export const QUANTISED_SCALE_BYTES = 4;

/**
 * A vector as a partition row stores it (vectors format 2): its float32 scale
 * (largest magnitude / 127), then one int8 per component, the component
 * divided by the scale and rounded. A quarter of float32's bytes, so a row
 * fits several to a page; the dense route's cosines move by about 1e-3
 * (the rounding error is at most half a scale step per component).
 */
export function quantise(vector: Float32Array): Buffer {
  const { scale, components } = int8Components(vector);
  const blob = Buffer.alloc(QUANTISED_SCALE_BYTES + vector.length);
  blob.writeFloatLE(scale, 0);
  blob.set(new Uint8Array(components.buffer), QUANTISED_SCALE_BYTES);
  return blob;
}

/**
 * A vector's int8 components and their float32 scale (largest magnitude /
 * 127): each component divided by the scale and rounded; all zero for the
 * zero vector. What a row stores after its scale, and what an i8 graph holds
 * (see VectorGraph). Applied to a dequantised row it gives the row's own
 * components back, so the graph's bytes of a row can be predicted.
 */
export function int8Components(vector: Float32Array): { scale: number; components: Int8Array } {
  let largest = 0;
  for (const x of vector) largest = Math.max(largest, Math.abs(x));
  const scale = Math.fround(largest / 127);
  const components = new Int8Array(vector.length);
  if (scale === 0) return { scale, components };
  for (let i = 0; i < vector.length; i++) components[i] = Math.max(-127, Math.min(127, Math.round(vector[i] / scale)));
  return { scale, components };
}

/**
 * The vector a row's BLOB holds: quantised (see `quantise`), or float32 as
 * rows of vectors format 1 stored it (told apart by length, `dimensions` × 4
 * bytes), so a row not yet converted still reads; empty for a row without one.
 * A quantised one is written into `into` when given (of its length), not a new array.
 */
export function dequantise(blob: Buffer, dimensions: number, into?: Float32Array): Float32Array {
  if (blob.byteLength === 0 || blob.byteLength === dimensions * 4) return fromBlob(blob);
  const scale = blob.readFloatLE(0);
  const components = new Int8Array(blob.buffer, blob.byteOffset + QUANTISED_SCALE_BYTES, blob.byteLength - QUANTISED_SCALE_BYTES);
  // A plain loop: `Float32Array.from` with a mapping function goes through the iterator protocol, ten times slower.
  const out = into?.length === components.length ? into : new Float32Array(components.length);
  for (let i = 0; i < components.length; i++) out[i] = components[i] * scale;
  return out;
}

export function norm(a: Float32Array): number {
  return Math.sqrt(dot(a, a));
}

/** Cosine similarity; 0 when either side is the zero vector. */
export function cosine(a: Float32Array, b: Float32Array, normA = norm(a)): number {
  const normB = norm(b);
  return normA === 0 || normB === 0 ? 0 : dot(a, b) / (normA * normB);
}
