import { createHash, createHmac } from 'node:crypto';

/**
 * A UUID (version 8, RFC 9562 "custom") derived from a hash, so the same
 * logical write always gets the same event id and retries are idempotent.
 */
export function deterministicUuid(...parts: string[]): string {
  const hash = createHash('sha256').update(parts.join('\u0000')).digest();
  hash[6] = (hash[6] & 0x0f) | 0x80;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Keyed fingerprint (HMAC-SHA256). Used wherever a hash of content is kept
 * (idempotency keys): an unkeyed hash of short personal text could be
 * reversed by guessing, a keyed one cannot without the key.
 */
export function keyedFingerprint(key: Uint8Array, ...parts: string[]): string {
  return createHmac('sha256', key).update(parts.join('\u0000')).digest('hex');
}
