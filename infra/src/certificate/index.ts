export {
  CertificateSigner,
  verifySignedCertificate,
  verifyDocumentSignature,
  type CertificateVerification,
  type Jwk,
  type SigningKeyring,
} from './signing';
export { verifySignedDocument, type DocumentVerification, type SignedDocumentType } from './documents';
export { verifySignedOffboardingCertificate, type OffboardingVerification } from './offboarding';
export { renderCertificatePdf, CERTIFICATE_ATTACHMENT, CERTIFICATE_PDF_LAYOUT, signatureFingerprint, documentFingerprint } from './pdf';
export { certifiedSummary, verifyCertificateDocument, verifyCertificateFile, type CertificateCheck, type VisiblePage } from './verify';
export { ledgerHeadSigner } from './ledger-head';
