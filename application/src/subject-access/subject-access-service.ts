import { createHash } from 'node:crypto';
import {
  CreateSubjectAccessRequest,
  DomainError,
  KeyShredded,
  ROLES,
  SUBJECT_ACCESS_REQUEST_ID,
  SubjectAccessExportGone,
  SubjectAccessNotFound,
  SubjectAccessNotReady,
  ValidationFailed,
  WrongExpectedVersion,
  assembleSubjectExport,
  parseOrThrow,
  recordsOf,
  streams,
  type AuditEntry,
  type Clock,
  type EventIngested,
  type EventLog,
  type IdSource,
  type KeyVault,
  type LineageEntry,
  type ManifestSigner,
  type MemoryIndex,
  type MemoryRecord,
  type Principal,
  SubjectAccessManifest,
  type ProducedSummary,
  type SignedSubjectAccessManifest,
  type SubjectAccessProgress,
  type SubjectExport,
} from '@elma/domain';
import type { AuditLog } from '../audit/audit-log';
import type { LegalHolds } from '../governance/legal-holds';
import type { PolicyStore } from '../governance/policy-store';
import type { EventSealer } from '../sealing/sealed-events';
import type { ProjectionRunner } from '../views/runner';
import { SubjectAccessStore, subjectAccessKeyId, type ExportDeletion, type SubjectAccessState } from './subject-access-store';

/** Roles that may request and read any subject's export. */
const SUBJECT_ACCESS_ROLES: readonly string[] = ROLES.subjectAccess;

/** The workflow that produces and deletes exports; who asked is on the request's own entry. */
const SUBJECT_ACCESS_ACTOR = 'system:subject-access';

export class SubjectAccessForbidden extends DomainError {
  constructor() {
    super(
      'AUTH.FORBIDDEN',
      'subject access needs the dpo or compliance role, or a data subject asking for themself where the tenant allows it',
    );
  }
}

export type ExportFile = 'export.json' | 'export.pdf';

export interface SubjectAccessDeps {
  log: EventLog;
  sealer: EventSealer;
  vault: KeyVault;
  index: MemoryIndex;
  holds: LegalHolds;
  policies: PolicyStore;
  audit: AuditLog;
  runner: ProjectionRunner;
  signer: ManifestSigner;
  /** Renders the readable PDF of an export (infra). */
  renderPdf: (data: SubjectExport) => Promise<Buffer>;
  /** The audit log's pseudonym of a subject id (entries name subjects by it). */
  auditSubject: (tenant: string, subject: string) => string;
  clock: Clock;
  ids: IdSource;
  /** How long an export stays downloadable. */
  ttlSeconds: number;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/**
 * Subject access and portability (GDPR Art. 15 and 20): who may ask and
 * follow (API side), the export's production (the workflow's activity), and
 * its deletion, at expiry or when an erasure reaches its subject or records.
 * The export files are sealed under the request's own vault key: deleting an
 * export shreds that key, so no copy of its content stays readable anywhere.
 */
export class SubjectAccessService {
  private readonly store: SubjectAccessStore;

  constructor(private readonly deps: SubjectAccessDeps) {
    this.store = new SubjectAccessStore({ log: deps.log });
  }

  /**
   * Stores a request after checking who asks: the subject-access roles for
   * anyone, or a data subject for themself when the tenant's policy has
   * `subjectAccess.selfService`. The caller then starts the workflow.
   */
  async request(principal: Principal, body: unknown, httpRequestId: string): Promise<{ requestId: string; subjectPseudonym: string }> {
    const input = parseOrThrow(CreateSubjectAccessRequest, body ?? {});
    const tenant = principal.tenant;
    const privileged = principal.roles.some((r) => SUBJECT_ACCESS_ROLES.includes(r));
    let subject: string;
    let selfService = false;
    if (privileged && input.subject !== undefined) {
      subject = input.subject;
    } else {
      const policy = await this.deps.policies.get(tenant);
      // A DPO or compliance officer names whose data is meant; only a data subject asking for themself may omit it.
      if (privileged && !policy.subjectAccess.selfService) {
        throw new ValidationFailed([{ path: 'subject', message: 'name the data subject whose data to export' }]);
      }
      const asksForSelf = input.subject === undefined || input.subject === principal.sub;
      if (!policy.subjectAccess.selfService || !asksForSelf) {
        await this.auditRequest(
          principal,
          null,
          'deny',
          privileged ? 'subject-required' : 'role:dpo|compliance',
          'subject-access',
          httpRequestId,
        );
        throw new SubjectAccessForbidden();
      }
      subject = principal.sub;
      selfService = true;
    }
    const requestId = `sar_${this.deps.ids.next()}`;
    const pseudonym = (await this.deps.vault.subjectPseudonyms(tenant, [subject], { create: true })).get(subject)!;
    await this.store.create({
      requestId,
      tenant,
      requestedBy: selfService ? pseudonym : principal.sub,
      selfService,
      requestedAt: this.now(),
      subjectPseudonym: pseudonym,
      subject: await this.deps.sealer.sealValue(tenant, subjectAccessKeyId(requestId), subject),
    });
    await this.auditRequest(
      principal,
      subject,
      'allow',
      selfService ? 'subject-access:self-service' : 'subject-access:requested',
      `subject-access/${requestId}`,
      httpRequestId,
    );
    return { requestId, subjectPseudonym: pseudonym };
  }

  /** Where the request stands; `SUBJECT_ACCESS.NOT_FOUND` unless the caller may follow it. */
  async progress(principal: Principal, requestId: string): Promise<SubjectAccessProgress> {
    return progressOf(await this.follow(principal, requestId));
  }

  /** The export file; 409 before it is produced, 410 once deleted. Each download is audited. */
  async file(principal: Principal, requestId: string, file: ExportFile, httpRequestId: string): Promise<Buffer> {
    const state = await this.follow(principal, requestId);
    const produced = await this.available(state);
    let files: { json: string; pdf: string };
    try {
      files = (await this.deps.sealer.openValue(state.request.tenant, subjectAccessKeyId(requestId), produced.files)) as typeof files;
    } catch (error) {
      if (error instanceof KeyShredded) throw new SubjectAccessExportGone(requestId, 'erased');
      throw error;
    }
    await this.auditDownload(principal, requestId, file, httpRequestId);
    return Buffer.from(file === 'export.json' ? files.json : files.pdf, 'base64');
  }

  /** The signed manifest; it names no content and stays available after the files are deleted. */
  async manifest(principal: Principal, requestId: string, httpRequestId: string): Promise<SignedSubjectAccessManifest> {
    const state = await this.follow(principal, requestId);
    if (!state.produced) throw new SubjectAccessNotReady(requestId);
    await this.auditDownload(principal, requestId, 'manifest', httpRequestId);
    return state.produced.manifest;
  }

  /**
   * The workflow's step: assembles the export from the index, the legal holds
   * and the audit trail, renders the PDF, signs the manifest, and stores the
   * files sealed. Idempotent: a produced export is summarised again.
   */
  async produce(tenant: string, requestId: string): Promise<ProducedSummary> {
    const state = await this.require(tenant, requestId);
    if (state.produced) return summaryOf(state);
    if (state.status !== 'running') throw new SubjectAccessExportGone(requestId, state.deleted?.reason ?? 'erased');
    const subject = (await this.deps.sealer.openValue(tenant, subjectAccessKeyId(requestId), state.request.subject)) as string;
    // What was written before the request is in the index before the export is assembled.
    if (this.deps.runner.running) await this.deps.runner.waitFor(await this.deps.log.headPosition(), 60_000);

    const lineage: LineageEntry[] = [];
    for await (const entry of this.deps.index.lineage(tenant)) lineage.push(entry);
    const records = new Map<string, MemoryRecord>();
    // Asked all at once: the index answers in order, one round trip for the lot rather than one per record.
    const ids = [...recordsOf(subject, lineage)];
    const stored = await Promise.all(ids.map((id) => this.deps.index.get(tenant, id)));
    ids.forEach((id, i) => stored[i] && records.set(id, stored[i].record));
    const events = await this.eventsOf(tenant, state.request.subjectPseudonym);
    const audit: AuditEntry[] = [];
    for await (const entry of this.deps.audit.export(tenant)) audit.push(entry);
    const producedAt = this.now();
    const expiresAt = new Date(Date.parse(producedAt) + this.deps.ttlSeconds * 1000).toISOString();
    const data = assembleSubjectExport({
      tenant,
      requestId,
      subject,
      subjectPseudonym: state.request.subjectPseudonym,
      auditSubject: this.deps.auditSubject(tenant, subject),
      producedAt,
      expiresAt,
      lineage,
      records,
      holds: await this.deps.holds.list(tenant, { fresh: true }),
      audit,
      events,
    });
    const json = Buffer.from(`${JSON.stringify(data, null, 2)}\n`, 'utf8');
    const pdf = await this.deps.renderPdf(data);
    const document = SubjectAccessManifest.parse({
      type: 'elma.subject-access-manifest',
      version: 1,
      tenant,
      requestId,
      subjectPseudonym: state.request.subjectPseudonym,
      requestedBy: state.request.requestedBy,
      requestedAt: state.request.requestedAt,
      producedAt,
      expiresAt,
      formatVersion: data.formatVersion,
      files: {
        json: { name: 'export.json', mediaType: 'application/json', bytes: json.length, sha256: sha256(json) },
        pdf: { name: 'export.pdf', mediaType: 'application/pdf', bytes: pdf.length, sha256: sha256(pdf) },
      },
      counts: data.counts,
      issuedAt: producedAt,
      keyId: this.deps.signer.keyId,
    });
    const manifest: SignedSubjectAccessManifest = { certificate: document, signature: this.deps.signer.signDocument(document) };
    const files = await this.deps.sealer.sealValue(tenant, subjectAccessKeyId(requestId), {
      json: json.toString('base64'),
      pdf: pdf.toString('base64'),
    });
    try {
      await this.store.produced(state, {
        producedAt,
        expiresAt,
        recordIds: [...data.records.map((r) => r.id), ...data.withheld.map((w) => w.id)],
        files,
        manifest,
      });
    } catch (error) {
      // Another attempt stored its export first (or the request was deleted meanwhile): that one stands.
      if (!(error instanceof WrongExpectedVersion)) throw error;
      return summaryOf(await this.require(tenant, requestId));
    }
    await this.deps.audit.record({
      tenant,
      actor: SUBJECT_ACCESS_ACTOR,
      subject,
      operation: 'export',
      resourceIds: [`subject-access/${requestId}`, 'produced'],
      decision: { effect: 'allow', rule: 'subject-access:produced' },
      requestId,
    });
    return summaryOf((await this.require(tenant, requestId))!);
  }

  /**
   * The subject's ingested events that are not erased, without their content (which their episodic records
   * carry): where the data came from. Read in clear from the subject's stream; content stays sealed.
   */
  private async eventsOf(tenant: string, pseudonym: string): Promise<Omit<EventIngested, 'content'>[]> {
    const found: Omit<EventIngested, 'content'>[] = [];
    for await (const event of this.deps.log.readStream(streams.events(tenant, pseudonym))) {
      if (event.type !== 'EventIngested') continue;
      const { content: _sealed, ...meta } = event.data as EventIngested;
      found.push(meta);
    }
    const erased = await this.deps.sealer.erasedAmong(
      tenant,
      found.map((e) => e.eventId),
    );
    return found.filter((e) => !erased.has(e.eventId));
  }

  /** Ends a request that produced nothing; its sealed subject becomes unreadable. `code` is a failure code, never content. */
  async fail(tenant: string, requestId: string, code: string): Promise<void> {
    const state = await this.require(tenant, requestId);
    if (state.status !== 'running') return;
    await this.store.failed(state, { code: /^[A-Z_]+\.[A-Z_]+$/.test(code) ? code : 'SUBJECT_ACCESS.FAILED', at: this.now() });
    await this.deps.vault.shred(tenant, [subjectAccessKeyId(requestId)]);
  }

  /** Deletes the export once its time is up (the workflow's timer; downloads check it too). */
  async expire(tenant: string, requestId: string): Promise<{ deleted: boolean }> {
    const state = await this.require(tenant, requestId);
    if (!state.produced || state.deleted || Date.parse(state.produced.expiresAt) > this.deps.clock.now().getTime())
      return { deleted: false };
    await this.delete(state, 'expired');
    return { deleted: true };
  }

  /**
   * The erasure's reach into exports: every stored (or still running) export
   * of the subject, and every export holding one of the erased records, is
   * deleted (its key shredded). Idempotent. Returns how many were deleted now.
   */
  async forgetExports(
    tenant: string,
    erased: { subject?: string; pseudonyms?: readonly string[]; recordIds: readonly string[] },
  ): Promise<number> {
    const pseudonyms = new Set(erased.pseudonyms ?? []);
    if (erased.subject !== undefined) {
      const pseudonym = (await this.deps.vault.subjectPseudonyms(tenant, [erased.subject], { create: false })).get(erased.subject);
      if (pseudonym !== undefined) pseudonyms.add(pseudonym);
    }
    const ids = new Set(erased.recordIds);
    let deleted = 0;
    for await (const state of this.store.all(tenant)) {
      if (state.deleted || state.status === 'failed') continue;
      const ofSubject = pseudonyms.has(state.request.subjectPseudonym);
      const holdsErased = state.produced?.recordIds.some((id) => ids.has(id)) ?? false;
      if (!ofSubject && !holdsErased) continue;
      await this.delete(state, 'erased');
      deleted++;
    }
    return deleted;
  }

  private async delete(state: SubjectAccessState, reason: ExportDeletion): Promise<void> {
    const { tenant, requestId } = state.request;
    await this.deps.vault.shred(tenant, [subjectAccessKeyId(requestId)]);
    await this.store.deleted(state, { reason, at: this.now() });
    await this.deps.audit.record({
      tenant,
      actor: SUBJECT_ACCESS_ACTOR,
      subject: null,
      operation: 'erase',
      resourceIds: [`subject-access/${requestId}`, `deleted:${reason}`],
      decision: { effect: 'allow', rule: `subject-access:${reason}` },
      requestId,
    });
  }

  /** The produced export, if it may still be downloaded; an expired one is deleted on the spot. */
  private async available(state: SubjectAccessState) {
    const { requestId } = state.request;
    if (state.deleted) throw new SubjectAccessExportGone(requestId, state.deleted.reason);
    if (!state.produced) throw new SubjectAccessNotReady(requestId);
    if (Date.parse(state.produced.expiresAt) <= this.deps.clock.now().getTime()) {
      await this.delete(state, 'expired');
      throw new SubjectAccessExportGone(requestId, 'expired');
    }
    return state.produced;
  }

  /**
   * The request if the caller may follow it: the subject-access roles, the
   * requester, or (self-service) the subject themself. Anything else, like
   * an unknown id or another tenant's, is `SUBJECT_ACCESS.NOT_FOUND`.
   */
  private async follow(principal: Principal, requestId: string): Promise<SubjectAccessState> {
    if (!SUBJECT_ACCESS_REQUEST_ID.test(requestId)) throw new SubjectAccessNotFound(requestId);
    const state = await this.store.load(principal.tenant, requestId);
    if (!state) throw new SubjectAccessNotFound(requestId);
    if (principal.roles.some((r) => SUBJECT_ACCESS_ROLES.includes(r))) return state;
    if (!state.request.selfService && state.request.requestedBy === principal.sub) return state;
    if (state.request.selfService) {
      const own = (await this.deps.vault.subjectPseudonyms(principal.tenant, [principal.sub], { create: false })).get(principal.sub);
      if (own !== undefined && own === state.request.subjectPseudonym) return state;
    }
    throw new SubjectAccessNotFound(requestId);
  }

  private async require(tenant: string, requestId: string): Promise<SubjectAccessState> {
    const state = await this.store.load(tenant, requestId);
    if (!state) throw new SubjectAccessNotFound(requestId);
    return state;
  }

  private auditRequest(
    principal: Principal,
    subject: string | null,
    effect: 'allow' | 'deny',
    rule: string,
    resource: string,
    requestId: string,
  ): Promise<AuditEntry> {
    return this.deps.audit.record({
      tenant: principal.tenant,
      actor: principal,
      subject,
      operation: 'export',
      resourceIds: [resource],
      decision: { effect, rule },
      requestId,
    });
  }

  private auditDownload(
    principal: Principal,
    requestId: string,
    file: ExportFile | 'manifest',
    httpRequestId: string,
  ): Promise<AuditEntry> {
    return this.deps.audit.record({
      tenant: principal.tenant,
      actor: principal,
      subject: null,
      operation: 'export',
      resourceIds: [`subject-access/${requestId}`, file],
      decision: { effect: 'allow', rule: 'subject-access:downloaded' },
      requestId: httpRequestId,
    });
  }

  private now(): string {
    return this.deps.clock.now().toISOString();
  }
}

function summaryOf(state: SubjectAccessState): ProducedSummary {
  const manifest = state.produced!.manifest.certificate;
  return {
    records: manifest.counts.records,
    withheld: manifest.counts.withheld,
    processing: manifest.counts.processing,
    jsonSha256: manifest.files.json.sha256,
    pdfSha256: manifest.files.pdf.sha256,
    expiresAt: manifest.expiresAt,
  };
}

export function progressOf(state: SubjectAccessState): SubjectAccessProgress {
  const { request, produced, deleted, failure } = state;
  const files: SubjectAccessProgress['files'] = produced ? (deleted ? ['manifest'] : ['export.json', 'export.pdf', 'manifest']) : [];
  return {
    requestId: request.requestId,
    tenant: request.tenant,
    status: state.status,
    subjectPseudonym: request.subjectPseudonym,
    requestedAt: request.requestedAt,
    ...(produced ? { producedAt: produced.producedAt, expiresAt: produced.expiresAt, counts: produced.manifest.certificate.counts } : {}),
    ...(deleted ? { endedAt: deleted.at } : failure ? { endedAt: failure.at } : {}),
    ...(failure ? { failure: { code: failure.code } } : {}),
    files,
  };
}
