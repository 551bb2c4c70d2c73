import { z } from 'zod';
import { DomainError } from '../shared/errors';

/** The signed documents ELMA issues, told apart by their `certificate.type`; all verify against the same JWKS. */
export const SignedDocumentKind = z.enum(['elma.erasure-certificate', 'elma.subject-access-manifest', 'elma.tenant-offboarding']);
export type SignedDocumentKind = z.infer<typeof SignedDocumentKind>;

/**
 * What a verified document certifies, in the words every kind shares: whose request, in which tenant, when
 * issued, how many records. Ids, times and counts, plus the display names of the staff where the document
 * signs them (an erasure certificate since format 2; never a data subject's, who is named by pseudonym).
 */
export const CertifiedSummary = z.strictObject({
  kind: SignedDocumentKind,
  requestId: z.string(),
  tenant: z.string(),
  issuedAt: z.string(),
  /** Records erased (erasure), exported (subject access) or destroyed with the tenant (off-boarding). */
  records: z.number().int().min(0),
  requestedBy: z.string(),
  /** The requester's display name, when the document signs one. */
  requestedByName: z.string().optional(),
  /** The second pair of eyes, when the document records one. */
  approvedBy: z.string().nullable(),
  /** The approver's display name, when the document signs one. */
  approvedByName: z.string().optional(),
});
export type CertifiedSummary = z.infer<typeof CertifiedSummary>;

/**
 * `POST /v1/certificates/verify`: the outcome of checking a certificate file against this ELMA's published
 * signing keys. `valid: false` is an answer, not an error: the file was read and its signature or schema does
 * not hold (`reason` says which, naming fields and key ids only). Only a valid document's claims are repeated.
 */
export const CertificateCheckResult = z.strictObject({
  valid: z.boolean(),
  format: z.enum(['json', 'pdf']),
  reason: z.string().nullable(),
  /** The key id that signed it (valid documents only). */
  signedBy: z.string().nullable(),
  certifies: CertifiedSummary.nullable(),
});
export type CertificateCheckResult = z.infer<typeof CertificateCheckResult>;

/** The uploaded file is neither a JSON document nor a PDF. */
export class CertificateUnreadable extends DomainError {
  constructor(why: string) {
    super('CERTIFICATE.UNREADABLE', `the file is not a certificate ELMA can read: ${why}`);
  }
}

/** A document of a newer format than this build reads: it is not judged by older rules. */
export class CertificateFormatTooNew extends DomainError {
  constructor(
    readonly version: number,
    readonly supported: number,
  ) {
    super('CERTIFICATE.FORMAT_TOO_NEW', `certificate format version ${version} is newer than this ELMA reads (${supported})`, {
      version,
      supported,
    });
  }
}
