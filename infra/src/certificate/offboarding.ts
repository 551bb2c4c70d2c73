import { SignedOffboardingCertificate, type OffboardingCertificate } from '@elma/domain';
import { verifyDocumentSignature } from './signing';

export type OffboardingVerification = { ok: true; certificate: OffboardingCertificate; kid: string } | { ok: false; reason: string };

/** Checks a signed off-boarding certificate against a published key set. Never throws. */
export function verifySignedOffboardingCertificate(input: unknown, jwks: unknown): OffboardingVerification {
  const signed = SignedOffboardingCertificate.safeParse(input);
  if (!signed.success) return { ok: false, reason: `malformed certificate: ${signed.error.issues[0]?.path.join('.') || '(root)'}` };
  const checked = verifyDocumentSignature(signed.data.certificate, signed.data.signature, jwks);
  return checked.ok ? { ok: true, certificate: signed.data.certificate, kid: checked.kid } : checked;
}
