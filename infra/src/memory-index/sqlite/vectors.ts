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

export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
  return sum;
}

export function norm(a: Float32Array): number {
  return Math.sqrt(dot(a, a));
}

/** Cosine similarity; 0 when either side is the zero vector. */
export function cosine(a: Float32Array, b: Float32Array, normA = norm(a)): number {
  const normB = norm(b);
  return normA === 0 || normB === 0 ? 0 : dot(a, b) / (normA * normB);
}
