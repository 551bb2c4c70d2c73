export { CertificateSigner, verifySignedCertificate, type CertificateVerification, type Jwk } from './signing';
export { renderCertificatePdf } from './pdf';
