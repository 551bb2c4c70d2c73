import { createHash, createHmac } from 'node:crypto';

/**
 * A UUID (version 8, RFC 9562 "custom") derived from a hash, so the same
 * logical write always gets the same event id and retries are idempotent.
 */
export function deterministicUuid(...parts: string[]): string {
  return asUuid(createHash('sha256').update(parts.join('\u0000')).digest());
}

/**
 * A UUID derived like `deterministicUuid` but under a server-held key
 * (HMAC-SHA256): stable for the same input, yet nobody without the key can
 * compute it from public input such as a tenant and an idempotency key.
 */
export function keyedUuid(key: Uint8Array, ...parts: string[]): string {
  return asUuid(createHmac('sha256', key).update(parts.join('\u0000')).digest());
}

function asUuid(hash: Buffer): string {
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

/** The key of event ids and idempotency claims, derived from the master key. */
export function eventIdKeyOf(masterKey: Uint8Array): Buffer {
  return Buffer.from(keyedFingerprint(masterKey, 'elma.event-id.v1'), 'hex');
}

/**
 * An ingested event's id: a keyed MAC of tenant and idempotency key. Events
 * stored before ids were keyed keep the plain `deterministicUuid(tenant, key)`
 * they were given.
 */
export function eventIdOf(key: Uint8Array, tenant: string, idempotencyKey: string): string {
  return keyedUuid(key, tenant, idempotencyKey);
}
