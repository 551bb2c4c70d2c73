import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { DomainError, FORMAT_VERSIONS, FormatTooNew } from '@elma/domain';

/** A sealed JSON value: AES-256-GCM, every binary field base64. Safe to store as JSON. */
export interface Sealed {
  v: 1;
  alg: 'A256GCM';
  iv: string;
  tag: string;
  ct: string;
}

/**
 * The ciphertext, key or AAD does not match: tampering, a wrong key, or a value
 * sealed for another record. Never retryable; the message carries no content.
 */
export class IntegrityCheckFailed extends DomainError {
  constructor(what: string) {
    super('CRYPTO.INTEGRITY_CHECK_FAILED', `${what} failed its integrity check`, { what });
  }
}

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export function sealJson(key: Uint8Array, value: unknown, aad: string): Sealed {
  const plaintext = JSON.stringify(value);
  if (plaintext === undefined) throw new TypeError('sealJson: value is not representable as JSON');
  const { iv, tag, ct } = encrypt(key, Buffer.from(plaintext, 'utf8'), aad);
  return { v: 1, alg: 'A256GCM', iv: iv.toString('base64'), tag: tag.toString('base64'), ct: ct.toString('base64') };
}

export function openJson<T = unknown>(key: Uint8Array, sealed: Sealed, aad: string): T {
  // A newer envelope is refused by name, never read as if it were this one (nor reported as tampering).
  const version: unknown = (sealed as { v?: unknown } | null)?.v;
  if (typeof version === 'number' && Number.isInteger(version) && version > FORMAT_VERSIONS.events)
    throw new FormatTooNew('events', version, 'sealed value');
  if (sealed?.v !== 1 || sealed.alg !== 'A256GCM') throw new IntegrityCheckFailed('sealed value');
  const plaintext = decrypt(
    key,
    {
      iv: Buffer.from(sealed.iv, 'base64'),
      tag: Buffer.from(sealed.tag, 'base64'),
      ct: Buffer.from(sealed.ct, 'base64'),
    },
    aad,
    'sealed value',
  );
  return JSON.parse(plaintext.toString('utf8')) as T;
}

/**
 * The tenant key is HKDF-SHA256(master, salt, info = tenant). The salt is random
 * per tenant and kept only in the key vault, so destroying it makes the tenant
 * key underivable even though the master secret lives on.
 */
export function deriveTenantKey(master: Uint8Array, salt: Uint8Array, tenant: string): Uint8Array {
  if (master.length < KEY_BYTES) throw new RangeError(`master key must be at least ${KEY_BYTES} bytes`);
  return new Uint8Array(hkdfSync('sha256', master, salt, `elma/tenant-key/v1/${tenant}`, KEY_BYTES));
}

export interface WrapContext {
  tenant: string;
  recordId: string;
}

/**
 * Wraps a 32-byte data key under the tenant key as `iv | tag | ciphertext`
 * (60 bytes). The AAD binds the wrapped key to its tenant and record, so a
 * wrapped key copied onto another record does not unwrap.
 */
export function wrapKey(tenantKey: Uint8Array, dataKey: Uint8Array, context: WrapContext): Uint8Array {
  if (dataKey.length !== KEY_BYTES) throw new RangeError(`data key must be ${KEY_BYTES} bytes`);
  const { iv, tag, ct } = encrypt(tenantKey, dataKey, wrapAad(context));
  return new Uint8Array(Buffer.concat([iv, tag, ct]));
}

export function unwrapKey(tenantKey: Uint8Array, wrapped: Uint8Array, context: WrapContext): Uint8Array {
  if (wrapped.length !== IV_BYTES + TAG_BYTES + KEY_BYTES) throw new IntegrityCheckFailed('wrapped key');
  const bytes = Buffer.from(wrapped.buffer, wrapped.byteOffset, wrapped.byteLength);
  const parts = {
    iv: bytes.subarray(0, IV_BYTES),
    tag: bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES),
    ct: bytes.subarray(IV_BYTES + TAG_BYTES),
  };
  return new Uint8Array(decrypt(tenantKey, parts, wrapAad(context), 'wrapped key'));
}

/** A NUL separator keeps ('ab', 'c') and ('a', 'bc') apart. */
function wrapAad({ tenant, recordId }: WrapContext): string {
  return `elma/data-key/v1\u0000${tenant}\u0000${recordId}`;
}

interface Parts {
  iv: Buffer;
  tag: Buffer;
  ct: Buffer;
}

/**
 * IVs come from a pool filled by one CSPRNG call per 1,024 IVs: a call per
 * IV costs more than the encryption of a small payload. Each IV is still 96
 * fresh random bits, used once.
 */
let ivPool = Buffer.alloc(0);
let ivOffset = 0;
function freshIv(): Buffer {
  if (ivOffset + IV_BYTES > ivPool.length) {
    ivPool = randomBytes(IV_BYTES * 1024);
    ivOffset = 0;
  }
  const iv = Buffer.from(ivPool.subarray(ivOffset, ivOffset + IV_BYTES));
  ivPool.fill(0, ivOffset, ivOffset + IV_BYTES);
  ivOffset += IV_BYTES;
  return iv;
}

function encrypt(key: Uint8Array, plaintext: Uint8Array, aad: string): Parts {
  assertKey(key);
  const iv = freshIv();
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), ct };
}

function decrypt(key: Uint8Array, { iv, tag, ct }: Parts, aad: string, what: string): Buffer {
  assertKey(key);
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new IntegrityCheckFailed(what);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ct), decipher.final()]);
  } catch {
    throw new IntegrityCheckFailed(what);
  }
}

function assertKey(key: Uint8Array): void {
  if (key.length !== KEY_BYTES) throw new RangeError(`AES-256-GCM key must be ${KEY_BYTES} bytes`);
}
