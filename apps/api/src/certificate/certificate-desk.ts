import { CertificateFormatTooNew, CertificatePdfNotSupported, CertificateUnreadable, type CertificateCheckResult } from '@elma/domain';
import { certifiedSummary, checkCertificateDocument, checkCertificateFile, type CertificateSigner } from '@elma/infra';

/**
 * What `POST /v1/certificates/verify` does: checks an uploaded certificate against this ELMA's own published
 * signing keys (the JWKS at /.well-known/elma-keys), as `elma verify-certificate` does offline.
 */
export class CertificateDesk {
  constructor(private readonly signer: Pick<CertificateSigner, 'jwks'>) {}

  /** `upload` is the file's bytes, or the document when it came as `application/json` (already parsed). */
  verify(upload: unknown): CertificateCheckResult {
    const jwks = this.signer.jwks();
    const check = Buffer.isBuffer(upload) ? checkCertificateFile(upload, jwks) : checkCertificateDocument(upload, jwks);
    switch (check.outcome) {
      case 'unreadable':
        throw new CertificateUnreadable(check.reason);
      case 'pdf_unsupported':
        throw new CertificatePdfNotSupported();
      case 'too_new':
        throw new CertificateFormatTooNew(check.version, check.supported);
    }
    const verified = check.verification;
    if (!verified.ok) return { valid: false, format: check.format, reason: verified.reason, signedBy: null, certifies: null };
    return { valid: true, format: check.format, reason: null, signedBy: verified.kid, certifies: certifiedSummary(verified) };
  }
}
