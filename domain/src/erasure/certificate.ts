import { z } from 'zod';
import { LogCompactionReport } from '../event-log/compaction';
import { MemoryKind } from '../memory/record';
import { SUBJECT_PSEUDONYM } from '../streams';
import { FORMAT_VERSIONS } from '../shared/formats';
import { ERASURE_STEPS, ErasureReason } from './erasure';

const IsoDate = z.iso.datetime({ offset: true });
const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const Pseudonym = z.string().regex(SUBJECT_PSEUDONYM);

/**
 * The scope as a certificate states it: ids and keyed fingerprints, never a
 * person's id or content. A data subject is named by the pseudonym their
 * streams had, whose mapping the erasure destroyed, so nobody can link it to
 * the person any more; certificates issued before pseudonyms name a keyed
 * fingerprint of the id (`subjectFingerprint`) instead.
 */
export const CertifiedScope = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('records'), recordIds: z.array(z.string()) }),
  z.strictObject({ type: z.literal('subject'), subjectPseudonym: Pseudonym.optional(), subjectFingerprint: Hex64.optional() }),
  z.strictObject({
    type: z.literal('time_range'),
    from: IsoDate,
    to: IsoDate,
    subjectPseudonym: Pseudonym.optional(),
    subjectFingerprint: Hex64.optional(),
  }),
  z.strictObject({ type: z.literal('fingerprint'), fingerprint: Hex64 }),
  z.strictObject({ type: z.literal('expired'), asOf: IsoDate }),
]);
export type CertifiedScope = z.infer<typeof CertifiedScope>;

export const ProbeResult = z.strictObject({
  /** Records the probe ran for. */
  checked: z.number().int().min(0),
  /** Records for which the probe found something (a certificate is only signed when every count is 0). */
  failed: z.number().int().min(0),
  /** Records the probe could not apply to, with why (e.g. text too short for a byte scan). */
  skipped: z.number().int().min(0).default(0),
});
export type ProbeResult = z.infer<typeof ProbeResult>;

export const Verification = z.strictObject({
  passed: z.boolean(),
  getById: ProbeResult,
  bm25: ProbeResult,
  knn: ProbeResult,
  decrypt: ProbeResult,
  byteScan: ProbeResult.extend({
    files: z.number().int().min(0),
    bytes: z.number().int().min(0),
    /** Files scanned, relative to the data folder (plus the Temporal database when it lives elsewhere). */
    paths: z.array(z.string()),
  }),
  /** Verification rounds it took (a failed round is followed by a purge retry). */
  rounds: z.number().int().min(1),
  /** Whether the deleted streams are physically gone from the log's files (absent on certificates before it was recorded). */
  logCompaction: LogCompactionReport.optional(),
});
export type Verification = z.infer<typeof Verification>;

/** A signed statement that an erasure happened, what it covered and how it was checked (docs/architecture.md#erasure). */
export const ErasureCertificate = z.strictObject({
  type: z.literal('elma.erasure-certificate'),
  /**
   * The certificate's format version, inside the signed body: this build writes `FORMAT_VERSIONS.certificates`
   * and reads every version up to it (2 added the organisation and the staff's display names).
   */
  version: z.number().int().min(1).max(FORMAT_VERSIONS.certificates),
  /** The organisation that issued it (ELMA_ORGANISATION_NAME), when configured. */
  organisation: z.string().min(1).optional(),
  tenant: z.string(),
  requestId: z.string(),
  request: z.strictObject({
    /** The requester's token subject, or the pseudonym of a data subject who asked for their own erasure. */
    requestedBy: z.string(),
    /** The display name of the member of staff who asked (token claim `name`); never set for a data subject. */
    requestedByName: z.string().min(1).optional(),
    requestedAt: IsoDate,
    reason: ErasureReason,
    scope: CertifiedScope,
    approvedBy: z.string().nullable(),
    /** The approver's display name (token claim `name`), when their token had one. */
    approvedByName: z.string().min(1).optional(),
    approvedAt: IsoDate.nullable(),
  }),
  closure: z.strictObject({
    size: z.number().int().min(0),
    byKind: z.partialRecord(MemoryKind, z.number().int()),
    /** Each erased record with the keyed fingerprint of its content (HMAC-SHA256, tenant key). */
    records: z.array(z.strictObject({ id: z.string(), kind: MemoryKind, contentFingerprint: Hex64 })),
    events: z.number().int().min(0),
    streamsDeleted: z.number().int().min(0),
    keysShredded: z.number().int().min(0),
    tombstones: z.number().int().min(0),
  }),
  /**
   * What applying the erasure again needs besides the records above (version 3): the erased events, the streams
   * deleted whole (named by pseudonyms), the pseudonyms forgotten and the tombstones' keyed fingerprints. With it,
   * the certificates a compliance officer keeps can rebuild or check the erasure ledger (`elma erasure reapply
   * --certificates`). Ids, pseudonyms and keyed hashes only, never content.
   */
  reapply: z
    .strictObject({
      eventIds: z.array(z.string()),
      deletedStreams: z.array(z.string()),
      forgottenPseudonyms: z.array(Pseudonym),
      tombstones: z.array(Hex64),
    })
    .optional(),
  legalHoldExceptions: z.array(z.strictObject({ recordId: z.string(), holdIds: z.array(z.string()) })),
  steps: z.array(
    z.strictObject({
      step: z.enum(ERASURE_STEPS),
      startedAt: IsoDate,
      finishedAt: IsoDate,
      attempts: z.number().int().min(0),
    }),
  ),
  verification: Verification,
  /** The audit entry that closed the erasure: the certificate is anchored to the tenant's hash chain. */
  auditAnchor: z.strictObject({ seq: z.number().int().min(0), hash: Hex64 }),
  issuedAt: IsoDate,
  keyId: z.string(),
});
export type ErasureCertificate = z.infer<typeof ErasureCertificate>;

/** The certificate as served and stored: the document plus its Ed25519 signature over `canonicalJson(certificate)`. */
export const SignedCertificate = z.strictObject({
  certificate: ErasureCertificate,
  signature: z.strictObject({ alg: z.literal('EdDSA'), kid: z.string(), value: z.string().regex(/^[A-Za-z0-9_-]+$/) }),
});
export type SignedCertificate = z.infer<typeof SignedCertificate>;

/** Signs erasure certificates (the port; infra's CertificateSigner signs with Ed25519). */
export interface CertificateSigner {
  readonly keyId: string;
  sign(certificate: ErasureCertificate): SignedCertificate;
}
