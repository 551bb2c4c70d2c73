import { createHash, createPrivateKey, createPublicKey, hkdfSync, sign, verify, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import {
  canonicalJson,
  ErasureCertificate,
  SignedCertificate,
  SubjectAccessManifest,
  SignedSubjectAccessManifest as SignedManifestSchema,
  type CertificateSigner as CertificateSigning,
  type SignedSubjectAccessManifest,
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

/**
 * Signs erasure certificates with an Ed25519 key derived from the master key,
 * so every node holding the same master key signs with (and publishes) the
 * same key, and nothing else has to be stored or rotated separately.
 */
export class CertificateSigner implements CertificateSigning {
  readonly keyId: string;
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;

  constructor({ masterKey }: { masterKey: Uint8Array }) {
    const seed = Buffer.from(hkdfSync('sha256', masterKey, 'elma', 'elma.certificate-signing.v1', 32));
    this.privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
    this.publicKey = createPublicKey(this.privateKey);
    const rawPublicKey = Buffer.from(this.jwk().x, 'base64url');
    this.keyId = `elma-${createHash('sha256').update(rawPublicKey).digest('hex').slice(0, 16)}`;
  }

  /**
   * Ed25519 over the canonical JSON of the certificate. Deterministic: the
   * same certificate always yields the same signature. The certificate is
   * parsed first so that what is signed is exactly what a verifier will see
   * after parsing (defaults filled, unknown fields rejected).
   */
  sign(certificate: ErasureCertificate): SignedCertificate {
    const parsed = ErasureCertificate.parse(certificate);
    if (parsed.keyId !== this.keyId) {
      throw new Error(`certificate names signing key ${parsed.keyId}, this signer is ${this.keyId}`);
    }
    const value = sign(null, canonicalBytes(parsed), this.privateKey).toString('base64url');
    return { certificate: parsed, signature: { alg: 'EdDSA', kid: this.keyId, value } };
  }

  /**
   * Signs another signed document (a subject-access manifest) exactly as `sign` signs a certificate: the same
   * key, the same envelope `{ certificate, signature }`, told apart by the document's `type`.
   */
  signDocument(document: SubjectAccessManifest): SignedSubjectAccessManifest {
    const parsed = SubjectAccessManifest.parse(document);
    if (parsed.keyId !== this.keyId) throw new Error(`document names signing key ${parsed.keyId}, this signer is ${this.keyId}`);
    const value = sign(null, Buffer.from(canonicalJson(parsed), 'utf8'), this.privateKey).toString('base64url');
    return { certificate: parsed, signature: { alg: 'EdDSA', kid: this.keyId, value } };
  }

  /** The key set to publish; verifiers select the key by `kid`. */
  jwks(): { keys: Jwk[] } {
    return { keys: [{ ...this.jwk(), kid: this.keyId, use: 'sig', alg: 'EdDSA' }] };
  }

  private jwk(): Pick<Jwk, 'kty' | 'crv' | 'x'> {
    const { x } = this.publicKey.export({ format: 'jwk' });
    if (typeof x !== 'string') throw new Error('Ed25519 public key exported without x');
    return { kty: 'OKP', crv: 'Ed25519', x };
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

  const keySet = KeySet.safeParse(jwks);
  if (!keySet.success) return { ok: false, reason: 'malformed key set' };
  const jwk = keySet.data.keys.find((key) => key.kid === signature.kid);
  if (!jwk) return { ok: false, reason: `unknown signing key ${signature.kid}` };
  if (signature.kid !== certificate.keyId) {
    return { ok: false, reason: `signature key ${signature.kid} is not the certificate's key` };
  }

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
    valid = verify(null, canonicalBytes(certificate), publicKey, signatureBytes);
  } catch {
    valid = false;
  }
  return valid ? { ok: true, certificate, kid: signature.kid } : { ok: false, reason: 'signature does not match' };
}

/** The signed documents `verifySignedDocument` knows, by their `type`. */
const DOCUMENTS = {
  'elma.erasure-certificate': SignedCertificate,
  'elma.subject-access-manifest': SignedManifestSchema,
} as const;
export type SignedDocumentType = keyof typeof DOCUMENTS;

export type DocumentVerification =
  { ok: true; type: SignedDocumentType; document: ErasureCertificate | SubjectAccessManifest; kid: string } | { ok: false; reason: string };

/**
 * Checks any signed document of ELMA (erasure certificate, subject-access manifest) against a published key
 * set, choosing its schema by `certificate.type`. Never throws; reasons name fields and key ids only.
 */
export function verifySignedDocument(input: unknown, jwks: unknown): DocumentVerification {
  const type = (input as { certificate?: { type?: unknown } } | null)?.certificate?.type;
  if (type === 'elma.erasure-certificate') {
    const result = verifySignedCertificate(input, jwks);
    return result.ok ? { ok: true, type, document: result.certificate, kid: result.kid } : result;
  }
  if (type !== 'elma.subject-access-manifest') return { ok: false, reason: 'malformed certificate: certificate.type' };
  const signed = DOCUMENTS[type].safeParse(input);
  if (!signed.success) return { ok: false, reason: `malformed certificate: ${issuePath(signed.error.issues[0]?.path)}` };
  const { certificate, signature } = signed.data;
  const keySet = KeySet.safeParse(jwks);
  if (!keySet.success) return { ok: false, reason: 'malformed key set' };
  const jwk = keySet.data.keys.find((key) => key.kid === signature.kid);
  if (!jwk) return { ok: false, reason: `unknown signing key ${signature.kid}` };
  if (signature.kid !== certificate.keyId) return { ok: false, reason: `signature key ${signature.kid} is not the certificate's key` };
  const publicKey = importEd25519(jwk);
  if (!publicKey) return { ok: false, reason: `unusable signing key ${signature.kid}` };
  const signatureBytes = Buffer.from(signature.value, 'base64url');
  if (signatureBytes.length !== SIGNATURE_BYTES || signatureBytes.toString('base64url') !== signature.value) {
    return { ok: false, reason: 'signature does not match' };
  }
  let valid: boolean;
  try {
    valid = verify(null, Buffer.from(canonicalJson(certificate), 'utf8'), publicKey, signatureBytes);
  } catch {
    valid = false;
  }
  return valid ? { ok: true, type, document: certificate, kid: signature.kid } : { ok: false, reason: 'signature does not match' };
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
