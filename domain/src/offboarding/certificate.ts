import { z } from 'zod';
import { OffboardExport, OffboardReason, OffboardStepSchema, StepCounts } from './offboarding';

const IsoDate = z.iso.datetime({ offset: true });
const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * A signed statement that a tenant was off-boarded: what was destroyed, how
 * it was checked, and the archive handed over. Verifiable on its own with the
 * JWKS (`elma verify-certificate`): the tenant's audit trail is destroyed with
 * the tenant (its entries name subjects by keyed fingerprints), so the
 * certificate carries the trail's final head, and is anchored to an entry of
 * the platform tenant's audit trail instead.
 */
export const OffboardingCertificate = z.strictObject({
  type: z.literal('elma.tenant-offboarding'),
  version: z.literal(1),
  tenant: z.string(),
  requestId: z.string(),
  request: z.strictObject({
    requestedBy: z.string(),
    requestedAt: IsoDate,
    reason: OffboardReason,
    approvedBy: z.string(),
    approvedAt: IsoDate,
  }),
  /** The archive written before destruction (its sha256 lets the receiver prove it is the one certified); null without export. */
  export: OffboardExport.nullable(),
  destroyed: z.strictObject({
    /** Records the index held. */
    records: z.number().int().min(0),
    streamsDeleted: z.number().int().min(0),
    events: z.number().int().min(0),
    /** The tenant key (salt), every data key and every subject pseudonym: all ciphertext of the tenant is unreadable. */
    tenantKeyDestroyed: z.literal(true),
  }),
  /** The tenant's audit trail as it ended (null when it had none): entries, last seq and hash of its chain. */
  tenantAudit: z.strictObject({ entries: z.number().int().min(0), seq: z.number().int().min(0), hash: Hex64 }).nullable(),
  steps: z.array(
    z.strictObject({
      step: OffboardStepSchema,
      startedAt: IsoDate,
      finishedAt: IsoDate,
      attempts: z.number().int().min(0),
      counts: StepCounts,
    }),
  ),
  verification: z.strictObject({
    passed: z.literal(true),
    indexRecords: z.literal(0),
    streamsLeft: z.literal(0),
    keyDestroyed: z.literal(true),
    byteScan: z.strictObject({
      needles: z.number().int().min(0),
      findings: z.literal(0),
      files: z.number().int().min(0),
      bytes: z.number().int().min(0),
    }),
    rounds: z.number().int().min(1),
  }),
  /** The platform tenant's audit entry that closed the off-boarding. */
  auditAnchor: z.strictObject({ tenant: z.string(), seq: z.number().int().min(0), hash: Hex64 }),
  issuedAt: IsoDate,
  keyId: z.string(),
});
export type OffboardingCertificate = z.infer<typeof OffboardingCertificate>;

/** Ed25519 over `canonicalJson(certificate)`, with the key of the JWKS that signs erasure certificates. */
export const DocumentSignature = z.strictObject({ alg: z.literal('EdDSA'), kid: z.string(), value: z.string().regex(/^[A-Za-z0-9_-]+$/) });
export type DocumentSignature = z.infer<typeof DocumentSignature>;

export const SignedOffboardingCertificate = z.strictObject({ certificate: OffboardingCertificate, signature: DocumentSignature });
export type SignedOffboardingCertificate = z.infer<typeof SignedOffboardingCertificate>;

/** Signs any document naming its key (infra's CertificateSigner). */
export interface DocumentSigner {
  readonly keyId: string;
  signDocument(document: { keyId: string }): DocumentSignature;
}
