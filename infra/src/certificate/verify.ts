import { FORMAT_VERSIONS, SignedCertificate, type CertifiedSummary } from '@elma/domain';
import type { ReadPdf } from '../pdf/read';
import { verifySignedDocument, type DocumentVerification, type SignedDocumentType } from './documents';

/** A successful verification without its `ok`, still told apart by `type`. */
type Verified<V = DocumentVerification> = V extends { ok: true } ? Omit<V, 'ok'> : never;

/**
 * How the visible page of a PDF relates to the certificate attached to it:
 * - `matches`: its text is the text this build renders for the attached certificate;
 * - `differs`: it is not (the page was edited, or another certificate's page was given this attachment);
 * - `not_compared`: another version of ELMA laid it out (`layout` names it), so the texts cannot be compared.
 */
export type VisiblePage = { status: 'matches' } | { status: 'differs'; page: number } | { status: 'not_compared'; layout: string | null };

/**
 * The outcome of checking a certificate file (JSON or PDF), for the CLI and the console alike:
 * - `valid`: the signature holds against the key set and, for a PDF, its visible page shows that certificate;
 * - `invalid`: the file is a certificate but does not hold (signature, key, or a visible page that differs);
 * - `unreadable`: no judgement possible (not a certificate file, no attachment, a format newer than this build).
 * Reasons name fields, key ids and versions, never certificate values: they may be logged and shown as they are.
 */
export type CertificateCheck =
  | ({
      status: 'valid';
      format: 'json' | 'pdf';
      /** The signed document exactly as checked (for a PDF: its attachment). */
      signed: unknown;
      /** For a PDF: how its page relates to the attachment; `not_compared` is valid but says so. */
      visible?: VisiblePage;
    } & Verified)
  | { status: 'invalid'; format: 'json' | 'pdf'; type?: SignedDocumentType; reason: string; visible?: VisiblePage }
  | {
      status: 'unreadable';
      format: 'json' | 'pdf' | 'unknown';
      reason: string;
      /** Set when the document is of a newer format than this build reads (not judged by older rules). */
      newer?: { version: number; supported: number };
    };

const PDF_MAGIC = Buffer.from('%PDF-');
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * Checks the bytes of a certificate file against a published key set (a JWKS). A JSON file is any signed
 * document of ELMA (erasure certificate, subject-access manifest, off-boarding certificate). A PDF is an
 * erasure certificate rendered by ELMA: its attached `certificate.json` is verified, and its pages are compared
 * with this build's rendering of that certificate. Never throws.
 */
export async function verifyCertificateFile(bytes: Uint8Array, jwks: unknown): Promise<CertificateCheck> {
  let buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.subarray(0, 1024).includes(PDF_MAGIC)) return verifyPdf(buffer, jwks);
  if (buffer.subarray(0, UTF8_BOM.length).equals(UTF8_BOM)) buffer = buffer.subarray(UTF8_BOM.length);
  let signed: unknown;
  try {
    signed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(buffer));
  } catch {
    return { status: 'unreadable', format: 'unknown', reason: 'neither a PDF nor JSON' };
  }
  return verifyJson(signed, jwks, 'json');
}

/** Checks a signed document already parsed from JSON (as `application/json` uploads arrive). Never throws. */
export function verifyCertificateDocument(signed: unknown, jwks: unknown): CertificateCheck {
  return verifyJson(signed, jwks, 'json');
}

function verifyJson(signed: unknown, jwks: unknown, format: 'json' | 'pdf'): CertificateCheck {
  // A certificate of a newer format (its `version`, inside the signed body) is not judged by this build's rules.
  const body = (signed as { certificate?: { version?: unknown; type?: unknown } } | null)?.certificate;
  if (body?.type === 'elma.erasure-certificate' && typeof body.version === 'number' && body.version > FORMAT_VERSIONS.certificates) {
    return {
      status: 'unreadable',
      format,
      reason: `certificate format version ${body.version} is newer than this elma reads (${FORMAT_VERSIONS.certificates}): verify it with a newer elma`,
      newer: { version: body.version, supported: FORMAT_VERSIONS.certificates },
    };
  }
  const result = verifySignedDocument(signed, jwks);
  if (!result.ok) return { status: 'invalid', format, reason: result.reason };
  const { ok: _ok, ...verified } = result;
  return { status: 'valid', format, signed, ...verified };
}

async function verifyPdf(bytes: Buffer, jwks: unknown): Promise<CertificateCheck> {
  // Loaded for a PDF only: pdf.js and PDFKit (with its fonts) are most of what `elma verify-certificate` would
  // otherwise load for a JSON certificate.
  const [{ PdfUnreadable, readPdf }, { CERTIFICATE_ATTACHMENT }] = await Promise.all([import('../pdf/read'), import('./pdf')]);
  let pdf: ReadPdf;
  try {
    pdf = await readPdf(bytes);
  } catch (error) {
    return { status: 'unreadable', format: 'pdf', reason: error instanceof PdfUnreadable ? error.message : 'not a readable PDF' };
  }
  const attachment = pdf.attachments.get(CERTIFICATE_ATTACHMENT);
  if (!attachment) return { status: 'unreadable', format: 'pdf', reason: `the PDF has no attached ${CERTIFICATE_ATTACHMENT}` };
  let signed: unknown;
  try {
    signed = JSON.parse(attachment.toString('utf8'));
  } catch {
    return { status: 'invalid', format: 'pdf', reason: `the attached ${CERTIFICATE_ATTACHMENT} is not JSON` };
  }
  const checked = verifyJson(signed, jwks, 'pdf');
  if (checked.status !== 'valid') return checked;
  if (checked.type !== 'elma.erasure-certificate') {
    return {
      status: 'invalid',
      format: 'pdf',
      type: checked.type,
      reason: `a PDF certificate attaches an erasure certificate, not ${checked.type}`,
    };
  }
  const visible = await compareVisiblePage(pdf, SignedCertificate.parse(signed));
  if (visible.status === 'differs') {
    return {
      status: 'invalid',
      format: 'pdf',
      type: checked.type,
      reason: `page ${visible.page} of the PDF does not show the attached certificate`,
      visible,
    };
  }
  return { ...checked, visible };
}

/**
 * Renders the attached certificate again and compares each page's text with the PDF's (whitespace aside, as
 * text extraction places it differently): what a reader sees must be what was signed. Fonts, glyph ids and
 * compression may differ between builds; the words may not.
 */
async function compareVisiblePage(pdf: ReadPdf, signed: SignedCertificate): Promise<VisiblePage> {
  const [{ readPdf }, { CERTIFICATE_PDF_LAYOUT, renderCertificatePdf }] = await Promise.all([import('../pdf/read'), import('./pdf')]);
  const custom = pdf.info.Custom as Record<string, unknown> | undefined;
  const layout = typeof custom?.ElmaLayout === 'string' ? custom.ElmaLayout : null;
  if (layout !== CERTIFICATE_PDF_LAYOUT) return { status: 'not_compared', layout };
  const expected = await readPdf(await renderCertificatePdf(signed));
  const pages = Math.max(expected.pages.length, pdf.pages.length);
  for (let i = 0; i < pages; i++) {
    if (normalise(pdf.pages[i]) !== normalise(expected.pages[i])) return { status: 'differs', page: i + 1 };
  }
  return { status: 'matches' };
}

const normalise = (text: string | undefined) => (text ?? '\u0000missing').replace(/\s+/g, '');

/** What a verified document certifies, the same fields for every kind (ids, times, counts and staff names, as the document). */
export function certifiedSummary(verified: Extract<CertificateCheck, { status: 'valid' }>): CertifiedSummary {
  const { requestId, tenant, issuedAt } = verified.document;
  const common = { kind: verified.type, requestId, tenant, issuedAt };
  switch (verified.type) {
    case 'elma.erasure-certificate': {
      const { closure, request } = verified.document;
      const { requestedBy, requestedByName, approvedBy, approvedByName } = request;
      return {
        ...common,
        records: closure.size,
        requestedBy,
        ...(requestedByName ? { requestedByName } : {}),
        approvedBy,
        ...(approvedByName ? { approvedByName } : {}),
      };
    }
    case 'elma.subject-access-manifest': {
      const { counts, requestedBy } = verified.document;
      return { ...common, records: counts.records, requestedBy, approvedBy: null };
    }
    case 'elma.tenant-offboarding': {
      const { destroyed, request } = verified.document;
      return { ...common, records: destroyed.records, requestedBy: request.requestedBy, approvedBy: request.approvedBy };
    }
    default: {
      const _exhaustive: never = verified;
      return _exhaustive;
    }
  }
}
