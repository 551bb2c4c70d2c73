import {
  SignedSubjectAccessManifest,
  type ErasureCertificate,
  type OffboardingCertificate,
  type SubjectAccessManifest,
} from '@elma/domain';
import { verifyDocumentSignature, verifySignedCertificate } from './signing';
import { verifySignedOffboardingCertificate } from './offboarding';

/** The signed documents ELMA issues, by their `certificate.type`; all verify against the same JWKS. */
export type SignedDocumentType = 'elma.erasure-certificate' | 'elma.subject-access-manifest' | 'elma.tenant-offboarding';

export type DocumentVerification =
  | { ok: true; type: 'elma.erasure-certificate'; document: ErasureCertificate; kid: string }
  | { ok: true; type: 'elma.subject-access-manifest'; document: SubjectAccessManifest; kid: string }
  | { ok: true; type: 'elma.tenant-offboarding'; document: OffboardingCertificate; kid: string }
  | { ok: false; reason: string };

/**
 * Checks any signed document of ELMA (erasure certificate, subject-access manifest, tenant off-boarding
 * certificate) against a published key set, choosing its schema by `certificate.type`. Never throws; reasons
 * name fields and key ids only.
 */
export function verifySignedDocument(input: unknown, jwks: unknown): DocumentVerification {
  const type = (input as { certificate?: { type?: unknown } } | null)?.certificate?.type;
  switch (type) {
    case 'elma.erasure-certificate': {
      const result = verifySignedCertificate(input, jwks);
      return result.ok ? { ok: true, type, document: result.certificate, kid: result.kid } : result;
    }
    case 'elma.tenant-offboarding': {
      const result = verifySignedOffboardingCertificate(input, jwks);
      return result.ok ? { ok: true, type, document: result.certificate, kid: result.kid } : result;
    }
    case 'elma.subject-access-manifest': {
      const signed = SignedSubjectAccessManifest.safeParse(input);
      if (!signed.success) return { ok: false, reason: `malformed certificate: ${signed.error.issues[0]?.path.join('.') || '(root)'}` };
      const checked = verifyDocumentSignature(signed.data.certificate, signed.data.signature, jwks);
      return checked.ok ? { ok: true, type, document: signed.data.certificate, kid: checked.kid } : checked;
    }
    default:
      return { ok: false, reason: 'malformed certificate: certificate.type' };
  }
}
