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
export { renderCertificatePdf } from './pdf';
export { checkCertificateFile, checkCertificateDocument, certifiedSummary, type CertificateFileCheck } from './file';
