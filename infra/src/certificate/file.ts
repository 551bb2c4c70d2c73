import { FORMAT_VERSIONS, type CertifiedSummary } from '@elma/domain';
import { verifySignedDocument, type DocumentVerification } from './documents';

/**
 * The outcome of checking a certificate file: `checked` carries the verification (valid or not); the other
 * outcomes mean no verdict could be reached (the file is not a document, a PDF this build cannot read, or a
 * format newer than this build's rules).
 */
export type CertificateFileCheck =
  | { outcome: 'checked'; format: 'json'; verification: DocumentVerification }
  | { outcome: 'unreadable'; reason: string }
  | { outcome: 'pdf_unsupported' }
  | { outcome: 'too_new'; version: number; supported: number };

const PDF_MAGIC = Buffer.from('%PDF-');
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * Checks the bytes of a certificate file (what `elma verify-certificate` reads and `POST
 * /v1/certificates/verify` receives) against a published key set (JWKS). A PDF is recognised by its
 * signature and reported as `pdf_unsupported`: this build verifies the signed JSON document. Never throws.
 */
export function checkCertificateFile(bytes: Uint8Array, jwks: unknown): CertificateFileCheck {
  let data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (data.subarray(0, PDF_MAGIC.length).equals(PDF_MAGIC)) return { outcome: 'pdf_unsupported' };
  if (data.subarray(0, UTF8_BOM.length).equals(UTF8_BOM)) data = data.subarray(UTF8_BOM.length);
  let document: unknown;
  try {
    document = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data));
  } catch {
    return { outcome: 'unreadable', reason: 'neither a JSON document nor a PDF' };
  }
  return checkCertificateDocument(document, jwks);
}

/** Checks a certificate already parsed from JSON. Never throws. */
export function checkCertificateDocument(document: unknown, jwks: unknown): CertificateFileCheck {
  // A certificate of a newer format (its `version`, inside the signed body) is not judged by this build's rules.
  const version = (document as { certificate?: { version?: unknown } } | null)?.certificate?.version;
  if (typeof version === 'number' && version > FORMAT_VERSIONS.certificates) {
    return { outcome: 'too_new', version, supported: FORMAT_VERSIONS.certificates };
  }
  return { outcome: 'checked', format: 'json', verification: verifySignedDocument(document, jwks) };
}

/** What a verified document certifies, the same fields for every kind (ids, times and counts, as the document). */
export function certifiedSummary(verified: Extract<DocumentVerification, { ok: true }>): CertifiedSummary {
  switch (verified.type) {
    case 'elma.erasure-certificate': {
      const c = verified.document;
      return {
        kind: verified.type,
        requestId: c.requestId,
        tenant: c.tenant,
        issuedAt: c.issuedAt,
        records: c.closure.size,
        requestedBy: c.request.requestedBy,
        approvedBy: c.request.approvedBy,
      };
    }
    case 'elma.subject-access-manifest': {
      const m = verified.document;
      return {
        kind: verified.type,
        requestId: m.requestId,
        tenant: m.tenant,
        issuedAt: m.issuedAt,
        records: m.counts.records,
        requestedBy: m.requestedBy,
        approvedBy: null,
      };
    }
    case 'elma.tenant-offboarding': {
      const c = verified.document;
      return {
        kind: verified.type,
        requestId: c.requestId,
        tenant: c.tenant,
        issuedAt: c.issuedAt,
        records: c.destroyed.records,
        requestedBy: c.request.requestedBy,
        approvedBy: c.request.approvedBy,
      };
    }
    default: {
      const _exhaustive: never = verified;
      return _exhaustive;
    }
  }
}
