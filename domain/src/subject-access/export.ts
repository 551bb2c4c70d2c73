import { z } from 'zod';
import { AuditOperation } from '../audit/audit';
import { DomainError } from '../shared/errors';
import { FORMAT_VERSIONS } from '../shared/formats';
import { SUBJECT_PSEUDONYM } from '../streams';
import { ConflictRule, MemoryContent, MemoryKind, MemoryStatus, RetentionClass, Sensitivity, SourceTrust } from '../memory/record';

const IsoDate = z.iso.datetime({ offset: true });
const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const Pseudonym = z.string().regex(SUBJECT_PSEUDONYM);
const Subject = z.string().min(1).max(200);

/** Subject-access request ids as the API makes them. */
export const SUBJECT_ACCESS_REQUEST_ID = /^sar_[A-Za-z0-9_-]{1,100}$/;

/**
 * `POST /v1/subject-access`: whose data to export. A data subject asking for
 * themself (tenant policy `subjectAccess.selfService`) may omit `subject`.
 */
export const CreateSubjectAccessRequest = z.strictObject({ subject: Subject.optional() });
export type CreateSubjectAccessRequest = z.infer<typeof CreateSubjectAccessRequest>;

/** A record of the subject, whole: content, provenance, lineage, purposes, retention, sensitivity, marks. */
export const ExportedRecord = z.strictObject({
  id: z.string(),
  kind: MemoryKind,
  status: MemoryStatus,
  version: z.number().int().min(1),
  content: MemoryContent,
  validFrom: IsoDate,
  validTo: IsoDate.nullable(),
  recordedAt: IsoDate,
  revisedAt: IsoDate.optional(),
  session: z.string().optional(),
  provenance: z.strictObject({
    sourceEventIds: z.array(z.string()),
    parentIds: z.array(z.string()),
    rule: z.string(),
    ruleVersion: z.string(),
    modelVersion: z.string().optional(),
    promptVersion: z.string().optional(),
  }),
  /** Records of this export derived from this one (its lineage downstream). */
  derivedRecordIds: z.array(z.string()),
  purposes: z.array(z.string()),
  sensitivity: Sensitivity,
  owner: z.string(),
  project: z.string().optional(),
  jurisdiction: z.string().optional(),
  retention: z.strictObject({ class: RetentionClass, expiresAt: IsoDate.nullable() }),
  confidence: z.number().min(0).max(1),
  sourceTrust: SourceTrust,
  tainted: z.boolean(),
  correction: z.boolean().optional(),
  resolution: z
    .strictObject({ rule: ConflictRule, against: z.array(z.string()), decidedAt: IsoDate, by: z.string().optional() })
    .optional(),
  usage: z.strictObject({ retrieved: z.number().int(), adopted: z.number().int(), lastUsedAt: IsoDate.nullable() }),
  /** `restricted`: readable only by the restricted roles; `legalHolds`: the holds that keep it from erasure and expiry. */
  marks: z.strictObject({ restricted: z.boolean(), legalHolds: z.array(z.string()) }),
});
export type ExportedRecord = z.infer<typeof ExportedRecord>;

/**
 * A derived record that also draws on other data subjects' records: listed by
 * id with the reason and the subject's own records it draws on, never with its
 * content (which would disclose the others').
 */
export const WithheldRecord = z.strictObject({
  id: z.string(),
  kind: MemoryKind,
  status: MemoryStatus,
  recordedAt: IsoDate,
  reason: z.literal('mixed_subjects'),
  /** The subject's own records (in this export) it was derived from. */
  fromRecordIds: z.array(z.string()),
  /** How many of its sources belong to other data subjects (a count, never who). */
  otherSources: z.number().int().min(0),
  marks: z.strictObject({ restricted: z.boolean(), legalHolds: z.array(z.string()) }),
});
export type WithheldRecord = z.infer<typeof WithheldRecord>;

/** One entry of the processing history, from the tenant's audit trail: who did what with the subject's records, when. */
export const ProcessingEntry = z.strictObject({
  seq: z.number().int().min(0),
  time: IsoDate,
  /**
   * Who acted, described, never named (`describedActor`): "the data subject", "another data subject", "a staff
   * member or service with role dpo", "ELMA itself".
   */
  actor: z.string(),
  operation: AuditOperation,
  effect: z.enum(['allow', 'deny']),
  rule: z.string(),
  /** The subject's records the entry concerns (other subjects' ids are left out). */
  recordIds: z.array(z.string()),
  /** The subject's ingested events the entry concerns (an ingest names events, not records). */
  eventIds: z.array(z.string()),
  /** The operation the entry belongs to (`erasure/<id>`, `recall/<id>`, `subject-access/<id>`), when it names one. */
  operations: z.array(z.string()),
  requestId: z.string(),
  /** The entry's hash in the tenant's chain: it can be checked against an audit export. */
  hash: Hex64,
});
export type ProcessingEntry = z.infer<typeof ProcessingEntry>;

/**
 * An event ingested about the subject: where the data came from (GDPR Art. 15(1)(g)), when and through whom.
 * Its content is the episodic record `recordId` (not repeated here).
 */
export const ExportedEvent = z.strictObject({
  id: z.string(),
  occurredAt: IsoDate,
  recordedAt: IsoDate,
  activity: z.string(),
  source: z.strictObject({ system: z.string(), channel: z.string().optional(), externalId: z.string().optional() }),
  sourceTrust: SourceTrust.optional(),
  /**
   * Who sent it to ELMA, described (`describedEventActor`): "the data subject", or "a caller other than the data
   * subject" (events record no role, and the caller may be another data subject; `source` names the system).
   */
  actor: z.string(),
  session: z.string().optional(),
  purposes: z.array(z.string()),
  sensitivity: Sensitivity,
  retention: RetentionClass,
  recordId: z.string(),
});
export type ExportedEvent = z.infer<typeof ExportedEvent>;

export const ExportCounts = z.strictObject({
  records: z.number().int().min(0),
  events: z.number().int().min(0),
  byKind: z.partialRecord(MemoryKind, z.number().int().min(0)),
  restricted: z.number().int().min(0),
  held: z.number().int().min(0),
  withheld: z.number().int().min(0),
  processing: z.number().int().min(0),
});
export type ExportCounts = z.infer<typeof ExportCounts>;

/**
 * Everything ELMA holds about one data subject (GDPR Art. 15), in a
 * machine-readable, portable form (Art. 20). `formatVersion` is
 * `FORMAT_VERSIONS.subjectExport`; readers refuse a version they do not know.
 */
export const SubjectExport = z.strictObject({
  format: z.literal('elma.subject-export'),
  formatVersion: z.literal(FORMAT_VERSIONS.subjectExport),
  tenant: z.string(),
  requestId: z.string().regex(SUBJECT_ACCESS_REQUEST_ID),
  subject: Subject,
  subjectPseudonym: Pseudonym,
  producedAt: IsoDate,
  expiresAt: IsoDate,
  counts: ExportCounts,
  records: z.array(ExportedRecord),
  /** The events the subject's records were learnt from, with their source. */
  events: z.array(ExportedEvent),
  withheld: z.array(WithheldRecord),
  processing: z.array(ProcessingEntry),
});
export type SubjectExport = z.infer<typeof SubjectExport>;

const ExportFile = z.strictObject({
  name: z.string(),
  mediaType: z.string(),
  bytes: z.number().int().min(0),
  sha256: Hex64,
});

/**
 * The signed statement of what an export held: the sha256 of the JSON and
 * the PDF, counts, and who asked. Ids, hashes and counts only: it names the
 * subject by pseudonym and outlives the export files.
 */
export const SubjectAccessManifest = z.strictObject({
  type: z.literal('elma.subject-access-manifest'),
  version: z.literal(1),
  tenant: z.string(),
  requestId: z.string().regex(SUBJECT_ACCESS_REQUEST_ID),
  subjectPseudonym: Pseudonym,
  /** The requester's id, or the subject's pseudonym when the subject asked for themself. */
  requestedBy: z.string(),
  requestedAt: IsoDate,
  producedAt: IsoDate,
  expiresAt: IsoDate,
  formatVersion: z.literal(FORMAT_VERSIONS.subjectExport),
  files: z.strictObject({ json: ExportFile, pdf: ExportFile }),
  counts: ExportCounts,
  issuedAt: IsoDate,
  keyId: z.string(),
});
export type SubjectAccessManifest = z.infer<typeof SubjectAccessManifest>;

/** The manifest as served: the document plus its Ed25519 signature over `canonicalJson(certificate)`, like an erasure certificate. */
export const SignedSubjectAccessManifest = z.strictObject({
  certificate: SubjectAccessManifest,
  signature: z.strictObject({ alg: z.literal('EdDSA'), kid: z.string(), value: z.string().regex(/^[A-Za-z0-9_-]+$/) }),
});
export type SignedSubjectAccessManifest = z.infer<typeof SignedSubjectAccessManifest>;

/** Signs a manifest with the certificate key (infra's CertificateSigner), so it verifies against the same JWKS. */
export interface ManifestSigner {
  readonly keyId: string;
  signDocument(document: { keyId: string }): SignedSubjectAccessManifest['signature'];
}

export const SubjectAccessStatus = z.enum(['running', 'completed', 'failed', 'expired', 'erased']);
export type SubjectAccessStatus = z.infer<typeof SubjectAccessStatus>;

/** `GET /v1/subject-access/{id}`: where a request stands. Ids, times and counts only. */
export const SubjectAccessProgress = z.strictObject({
  requestId: z.string(),
  tenant: z.string(),
  status: SubjectAccessStatus,
  subjectPseudonym: Pseudonym,
  requestedAt: IsoDate,
  producedAt: IsoDate.optional(),
  expiresAt: IsoDate.optional(),
  /** Why the export is gone (expired, erased with its subject) or failed. */
  endedAt: IsoDate.optional(),
  failure: z.strictObject({ code: z.string() }).optional(),
  counts: ExportCounts.optional(),
  files: z.array(z.enum(['export.json', 'export.pdf', 'manifest'])),
});
export type SubjectAccessProgress = z.infer<typeof SubjectAccessProgress>;

export class SubjectAccessNotFound extends DomainError {
  constructor(id: string) {
    // The same answer for an unknown id, another tenant's and one the caller may not follow.
    super('SUBJECT_ACCESS.NOT_FOUND', `subject access request ${id.slice(0, 120)} not found`, {});
  }
}

export class SubjectAccessNotReady extends DomainError {
  constructor(id: string) {
    super('SUBJECT_ACCESS.NOT_READY', `the export of subject access request ${id} is not produced yet`, { requestId: id });
  }
}

export class SubjectAccessExportGone extends DomainError {
  constructor(id: string, reason: 'expired' | 'erased') {
    super('SUBJECT_ACCESS.EXPORT_GONE', `the export of subject access request ${id} was deleted (${reason})`, { requestId: id, reason });
  }
}

/** What a produced export amounts to: counts and hashes only (it travels through the workflow's history). */
export interface ProducedSummary {
  records: number;
  withheld: number;
  processing: number;
  jsonSha256: string;
  pdfSha256: string;
  expiresAt: string;
}
