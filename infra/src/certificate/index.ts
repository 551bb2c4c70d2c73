export { CertificateSigner, verifySignedCertificate, type CertificateVerification, type Jwk, type SigningKeyring } from './signing';
export { renderCertificatePdf } from './pdf';
