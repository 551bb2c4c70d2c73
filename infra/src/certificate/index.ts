export { CertificateSigner, verifySignedCertificate, verifyDocumentSignature, type CertificateVerification, type Jwk } from './signing';
export { verifySignedOffboardingCertificate, type OffboardingVerification } from './offboarding';
export { renderCertificatePdf } from './pdf';
