import { createHash, createPrivateKey, createPublicKey, hkdfSync, sign, verify, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import {
  canonicalJson,
  ErasureCertificate,
  SignedCertificate,
  type CertificateSigner as CertificateSigning,
  type DocumentSignature,
} from '@elma/domain';

/** DER prefix of a PKCS#8 Ed25519 private key; the 32-byte seed follows it (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SIGNATURE_BYTES = 64;

/** A public signing key as published at `/.well-known/elma-keys` (RFC 8037). */
export interface Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
  alg: 'EdDSA';
}

export type CertificateVerification = { ok: true; certificate: ErasureCertificate; kid: string } | { ok: false; reason: string };

/** The signing keys a signer uses: the one that signs, and every public key it ever signed with (for the JWKS). */
export interface SigningKeyring {
  active: { kid: string; seed: Uint8Array };
  published: { kid: string; x: string }[];
}

/** The Ed25519 seed format 1 derived from the master key (the key vault keeps it as signing key version 1). */
export function legacySigningSeed(masterKey: Uint8Array): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', masterKey, 'elma', 'elma.certificate-signing.v1', 32));
}

/** `createPrivateKey` input for a 32-byte Ed25519 seed. */
export function ed25519PrivateKey(seed: Uint8Array): { key: Buffer; format: 'der'; type: 'pkcs8' } {
  return { key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' };
}

/** A key's id: `elma-` and 16 hex digits of the SHA-256 of the raw public key (the JWK `x`). */
export function signingKeyId(x: string): string {
  return `elma-${createHash('sha256').update(Buffer.from(x, 'base64url')).digest('hex').slice(0, 16)}`;
}

/**
 * Signs certificates with Ed25519. Given a master key, with the one key
 * derived from it (format 1: every node holding the same master key signs
 * with the same key). Given a keyring (the key vault's, which rotates), with
 * the keyring's active key, publishing every key the keyring ever held so
 * that certificates signed before a rotation still verify.
 */
export class CertificateSigner implements CertificateSigning {
  private readonly ring: () => SigningKeyring;
  private readonly privateKeys = new Map<string, KeyObject>();

  constructor(source: { masterKey: Uint8Array } | { keyring: () => SigningKeyring }) {
    if ('keyring' in source) {
      this.ring = source.keyring;
    } else {
      const seed = legacySigningSeed(source.masterKey);
      const { x } = createPublicKey(createPrivateKey(ed25519PrivateKey(seed))).export({ format: 'jwk' });
      if (typeof x !== 'string') throw new Error('Ed25519 public key exported without x');
      const fixed: SigningKeyring = { active: { kid: signingKeyId(x), seed }, published: [{ kid: signingKeyId(x), x }] };
      this.ring = () => fixed;
    }
  }

  /** The id of the key new certificates are signed with (it changes when the signing key is rotated). */
  get keyId(): string {
    return this.ring().active.kid;
  }

  /**
   * Ed25519 over the canonical JSON of the certificate. Deterministic: the
   * same certificate always yields the same signature. The certificate is
   * parsed first so that what is signed is exactly what a verifier will see
   * after parsing (defaults filled, unknown fields rejected).
   */
  sign(certificate: ErasureCertificate): SignedCertificate {
    const parsed = ErasureCertificate.parse(certificate);
    const { active } = this.ring();
    if (parsed.keyId !== active.kid) {
      throw new Error(`certificate names signing key ${parsed.keyId}, this signer is ${active.kid}`);
    }
    const value = sign(null, canonicalBytes(parsed), this.activeKey()).toString('base64url');
    return { certificate: parsed, signature: { alg: 'EdDSA', kid: active.kid, value } };
  }

  /**
   * Signs another signed document (an off-boarding certificate, a subject-access manifest) the same way:
   * Ed25519 over its canonical JSON, with the active key of the same JWKS. The caller parses the document
   * with its schema first.
   */
  signDocument(document: { keyId: string }): DocumentSignature {
    const { active } = this.ring();
    if (document.keyId !== active.kid) throw new Error(`document names signing key ${document.keyId}, this signer is ${active.kid}`);
    return {
      alg: 'EdDSA',
      kid: active.kid,
      value: sign(null, Buffer.from(canonicalJson(document), 'utf8'), this.activeKey()).toString('base64url'),
    };
  }

  /** The private key of the keyring's active key, kept while it stays active. */
  private activeKey(): KeyObject {
    const { active } = this.ring();
    let privateKey = this.privateKeys.get(active.kid);
    if (!privateKey) {
      privateKey = createPrivateKey(ed25519PrivateKey(active.seed));
      this.privateKeys.clear();
      this.privateKeys.set(active.kid, privateKey);
    }
    return privateKey;
  }

  /** The key set to publish, the current key first; verifiers select the key by `kid`. */
  jwks(): { keys: Jwk[] } {
    const { active, published } = this.ring();
    const ordered = [...published.filter((k) => k.kid === active.kid), ...published.filter((k) => k.kid !== active.kid).reverse()];
    return { keys: ordered.map(({ kid, x }) => ({ kty: 'OKP', crv: 'Ed25519', x, kid, use: 'sig', alg: 'EdDSA' })) };
  }
}

/** Any key set: other key types may sit next to ours, they are only parsed once selected. */
const KeySet = z.object({ keys: z.array(z.looseObject({ kid: z.string() })) });
const Ed25519Jwk = z.looseObject({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: z.string() });

/**
 * Checks a signed certificate against a published key set. Never throws: any
 * malformed input is a failed verification. Reasons name fields and the key
 * id, never certificate values, so they can be logged and shown as they are.
 */
export function verifySignedCertificate(input: unknown, jwks: unknown): CertificateVerification {
  const signed = SignedCertificate.safeParse(input);
  if (!signed.success) return { ok: false, reason: `malformed certificate: ${issuePath(signed.error.issues[0]?.path)}` };
  const { certificate, signature } = signed.data;

  const checked = verifyDocumentSignature(certificate, signature, jwks);
  return checked.ok ? { ok: true, certificate, kid: checked.kid } : checked;
}

/**
 * Checks the signature of a document signed by `signDocument` (already parsed with its schema) against a key
 * set. Never throws; reasons name the key id, never document values.
 */
export function verifyDocumentSignature(
  document: { keyId: string },
  signature: DocumentSignature,
  jwks: unknown,
): { ok: true; kid: string } | { ok: false; reason: string } {
  const keySet = KeySet.safeParse(jwks);
  if (!keySet.success) return { ok: false, reason: 'malformed key set' };
  const jwk = keySet.data.keys.find((key) => key.kid === signature.kid);
  if (!jwk) return { ok: false, reason: `unknown signing key ${signature.kid}` };
  if (signature.kid !== document.keyId) return { ok: false, reason: `signature key ${signature.kid} is not the certificate's key` };
  const publicKey = importEd25519(jwk);
  if (!publicKey) return { ok: false, reason: `unusable signing key ${signature.kid}` };
  // Strict decoding: base64url's spare bits in the last character would
  // otherwise let several strings stand for one signature.
  const signatureBytes = Buffer.from(signature.value, 'base64url');
  if (signatureBytes.length !== SIGNATURE_BYTES || signatureBytes.toString('base64url') !== signature.value) {
    return { ok: false, reason: 'signature does not match' };
  }
  let valid: boolean;
  try {
    valid = verify(null, Buffer.from(canonicalJson(document), 'utf8'), publicKey, signatureBytes);
  } catch {
    valid = false;
  }
  return valid ? { ok: true, kid: signature.kid } : { ok: false, reason: 'signature does not match' };
}

function canonicalBytes(certificate: ErasureCertificate): Buffer {
  return Buffer.from(canonicalJson(certificate), 'utf8');
}

function importEd25519(jwk: unknown): KeyObject | undefined {
  const parsed = Ed25519Jwk.safeParse(jwk);
  if (!parsed.success) return undefined;
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: parsed.data.x }, format: 'jwk' });
    return key.asymmetricKeyType === 'ed25519' ? key : undefined;
  } catch {
    return undefined;
  }
}

/** `certificate.closure.records[3].id`: schema keys and indices only (record keys are enum members). */
function issuePath(path: readonly PropertyKey[] | undefined): string {
  if (!path || path.length === 0) return '(root)';
  return path.map((segment, i) => (typeof segment === 'number' ? `[${segment}]` : `${i === 0 ? '' : '.'}${String(segment)}`)).join('');
}
