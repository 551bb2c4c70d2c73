export {
  CertificateSigner,
  verifySignedCertificate,
  verifySignedDocument,
  type CertificateVerification,
  type DocumentVerification,
  type SignedDocumentType,
  type Jwk,
} from './signing';
export { renderCertificatePdf } from './pdf';
