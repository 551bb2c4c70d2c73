import { CertificateFormatTooNew, CertificateUnreadable, type CertificateCheckResult } from '@elma/domain';
import { certifiedSummary, verifyCertificateDocument, verifyCertificateFile, type CertificateSigner } from '@elma/infra';

/**
 * What `POST /v1/certificates/verify` does: checks an uploaded certificate (JSON, or the PDF with the signed JSON
 * attached) against this ELMA's own published signing keys (the JWKS at /.well-known/elma-keys), with the same
 * function as `elma verify-certificate` offline.
 */
export class CertificateDesk {
  constructor(private readonly signer: Pick<CertificateSigner, 'jwks'>) {}

  /** `upload` is the file's bytes, or the document when it came as `application/json` (already parsed). */
  async verify(upload: unknown): Promise<CertificateCheckResult> {
    const jwks = this.signer.jwks();
    const check = Buffer.isBuffer(upload) ? await verifyCertificateFile(upload, jwks) : verifyCertificateDocument(upload, jwks);
    switch (check.status) {
      case 'unreadable':
        if (check.newer) throw new CertificateFormatTooNew(check.newer.version, check.newer.supported);
        throw new CertificateUnreadable(check.reason);
      case 'invalid':
        return { valid: false, format: check.format, reason: check.reason, signedBy: null, certifies: null };
      case 'valid':
        return { valid: true, format: check.format, reason: null, signedBy: check.kid, certifies: certifiedSummary(check) };
    }
  }
}
