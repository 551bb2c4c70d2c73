import {
  ERASURE_STEPS,
  ErasureCertificate,
  FORMAT_VERSIONS,
  type AuditAnchor,
  type CertifiedScope,
  type Clock,
  type ErasureLedger,
  type ErasureLedgerEntry,
  type EventLog,
  type SignedCertificate,
  type ErasureScope,
  type KeyVault,
  type MemoryIndex,
  type MemoryKind,
  type Verification,
  type Workset,
} from '@elma/domain';
import { recordedName } from '../audit/audit-actor';
import type { AuditLog } from '../audit/audit-log';
import type { CertificateSigner } from '@elma/domain';
import type { LegalHolds } from '../governance/legal-holds';
import type { PolicyStore } from '../governance/policy-store';
import { keepsPseudonym, recordStep, requireWorkset, type EraseSet, type HeldRecord, type StepAttempt } from './erasure-common';
import { ErasureStore, type Erasure } from './erasure-store';
import type { ErasureFingerprints } from './fingerprints';

/** What the steps before certification found and did: the certificate states it. */
export interface CertifyOutcome {
  set: EraseSet;
  held: HeldRecord[];
  verification: Verification;
  approvedBy: string | null;
  approvedAt: string | null;
  streamsDeleted: number;
  tombstones: number;
}

/** What a certificate states for re-application (version 3), or what is worked out for an older one. */
type CertifiedReapply = NonNullable<ErasureCertificate['reapply']>;

/**
 * The ledger entry of a certified erasure: what the certificate states, so that the certificates kept outside can
 * rebuild the ledger entry for entry (`elma erasure reapply --certificates`).
 */
export function ledgerEntryOf(signed: SignedCertificate, reapply: CertifiedReapply): ErasureLedgerEntry {
  const { certificate, signature } = signed;
  return {
    formatVersion: FORMAT_VERSIONS.erasureLedger,
    tenant: certificate.tenant,
    requestId: certificate.requestId,
    completedAt: certificate.issuedAt,
    recordIds: certificate.closure.records.map((r) => r.id),
    ...reapply,
    certificate: { keyId: signature.kid, signature: signature.value },
  };
}

/** The steps the erasure went through, in the order of `ERASURE_STEPS`. */
function certifiedSteps(steps: Erasure['steps']) {
  return ERASURE_STEPS.flatMap((step) => {
    const record = steps.get(step);
    return record ? [{ step, startedAt: record.startedAt, finishedAt: record.finishedAt, attempts: record.attempts }] : [];
  });
}

/**
 * The end of an erasure: the signed certificate (step 12), or the
 * abandonment of a request that gets none, and the sweep that abandons
 * worksets left behind. Each reads the erasure stream once.
 */
export class ErasureCertification {
  constructor(
    private readonly deps: {
      store: ErasureStore;
      index: MemoryIndex;
      vault: KeyVault;
      holds: LegalHolds;
      policies: PolicyStore;
      audit: AuditLog;
      fingerprints: ErasureFingerprints;
      signer: CertificateSigner;
      clock: Clock;
      log: EventLog;
      /** Where completed erasures are kept beyond the reach of backups; absent, nothing is kept (tests of other parts). */
      ledger?: ErasureLedger;
      /** The organisation named as the issuer on every certificate (ELMA_ORGANISATION_NAME); absent, none is named. */
      organisation?: string;
    },
  ) {}

  /**
   * Step 12: the closing audit entry, the certificate (signed with Ed25519 and
   * anchored to that entry), and last the request key's shredding, which
   * makes the scope and workset unreadable. Idempotent: a stored certificate
   * is returned as it is.
   */
  async certify(
    tenant: string,
    requestId: string,
    outcome: CertifyOutcome,
    at: StepAttempt,
  ): Promise<{ keyId: string; signature: string }> {
    const erasure = await this.deps.store.load(tenant, requestId);
    const existing = erasure.certificate;
    if (existing) {
      // A retry after the certificate was saved: finish what followed it. The scope is readable until the request key goes.
      if (!(await this.deps.vault.isShredded(tenant, ErasureStore.keyId(requestId)))) {
        const scope = await erasure.scope();
        // A certificate from before version 3 holds no `reapply`: its fields are worked out as they were then.
        const reapply =
          existing.certificate.reapply ??
          (await this.reapplyFields(erasure, outcome, await this.forgettable(tenant, scope, outcome, existing)));
        await this.forgetErasedSubject(tenant, scope, outcome.held);
        await this.recordInLedger(erasure, existing, reapply);
      }
      await this.deps.vault.shred(tenant, [ErasureStore.keyId(requestId)]);
      return { keyId: existing.signature.kid, signature: existing.signature.value };
    }
    const { request } = erasure;
    const scope = await erasure.scope();
    const workset = await requireWorkset(erasure);
    await recordStep(this.deps, erasure, 'certify', at, { records: outcome.set.recordIds.length });

    const anchor = await this.auditAnchor(tenant, requestId, erasure);

    const closure = this.certifiedClosure(tenant, workset, outcome);
    const steps = erasure.steps;
    const certifiedScope = await this.certifiedScope(tenant, scope);
    // A data subject (their own records, or any) is named by their pseudonym, as in the audit trail, never by id or name.
    const requestedBy = await recordedName(this.deps.vault, tenant, request.requestedBy.sub);
    const requestedByName = requestedBy === request.requestedBy.sub ? request.requestedBy.name : undefined;
    const approvedByName = erasure.approverName(outcome.approvedBy);
    const forgotten =
      scope.type === 'subject' && certifiedScope.type === 'subject' && certifiedScope.subjectPseudonym
        ? (await keepsPseudonym(this.deps, tenant, scope, outcome.held.length))
          ? []
          : [certifiedScope.subjectPseudonym]
        : [];
    const reapply = await this.reapplyFields(erasure, outcome, forgotten);
    const certificate = ErasureCertificate.parse({
      type: 'elma.erasure-certificate',
      version: FORMAT_VERSIONS.certificates,
      ...(this.deps.organisation ? { organisation: this.deps.organisation } : {}),
      tenant,
      requestId,
      request: {
        requestedBy,
        ...(requestedByName ? { requestedByName } : {}),
        requestedAt: request.requestedAt,
        reason: request.reason,
        scope: certifiedScope,
        approvedBy: outcome.approvedBy,
        ...(approvedByName ? { approvedByName } : {}),
        approvedAt: outcome.approvedAt,
      },
      closure,
      reapply,
      legalHoldExceptions: outcome.held,
      steps: certifiedSteps(steps),
      verification: outcome.verification,
      auditAnchor: anchor,
      issuedAt: steps.get('certify')!.finishedAt,
      keyId: this.deps.signer.keyId,
    });
    const signed = this.deps.signer.sign(certificate);
    await this.deps.store.saveCertificate(erasure, signed);
    await this.forgetErasedSubject(tenant, scope, outcome.held);
    await this.recordInLedger(erasure, signed, reapply);
    await this.deps.vault.shred(tenant, [ErasureStore.keyId(requestId)]);
    return { keyId: signed.signature.kid, signature: signed.signature.value };
  }

  /**
   * What applying the erasure again needs (the certificate states it, the ledger keeps it): the events, the
   * streams step 9 deleted whole (they read as empty now; those it kept hold other events), the pseudonyms
   * forgotten and the tombstones' keyed fingerprints, no content. Read from the workset, so before the request key goes.
   */
  private async reapplyFields(erasure: Erasure, outcome: CertifyOutcome, forgottenPseudonyms: string[]) {
    const { tenant } = erasure;
    const workset = await requireWorkset(erasure);
    const erased = new Set(outcome.set.recordIds);
    const records = workset.records.filter((r) => erased.has(r.id));
    const deletedStreams: string[] = [];
    for (const stream of new Set(outcome.set.eventIds.map((id) => workset.eventStreams[id]).filter(Boolean))) {
      let empty = true;
      for await (const _event of this.deps.log.readStream(stream)) {
        empty = false;
        break;
      }
      if (empty) deletedStreams.push(stream);
    }
    return {
      eventIds: outcome.set.eventIds,
      deletedStreams,
      forgottenPseudonyms,
      tombstones: [
        ...new Set([
          ...records.map((r) => this.deps.fingerprints.tombstone(tenant, r.subject, r.text)),
          ...records.map((r) => this.deps.fingerprints.tenantTombstone(tenant, r.text)),
        ]),
      ],
    };
  }

  /** For a certificate without `reapply`: a pseudonym it names that maps to nobody any more was forgotten by this erasure. */
  private async forgettable(tenant: string, scope: ErasureScope, outcome: CertifyOutcome, signed: SignedCertificate): Promise<string[]> {
    const named = signed.certificate.request.scope;
    const pseudonym = 'subjectPseudonym' in named && named.subjectPseudonym ? named.subjectPseudonym : undefined;
    if (!pseudonym || scope.type !== 'subject' || (await keepsPseudonym(this.deps, tenant, scope, outcome.held.length))) return [];
    return [pseudonym];
  }

  /** The erasure's entry in the ledger, so that a backup restored later is erased again (see `ErasureLedgerReapply`). Idempotent. */
  private async recordInLedger(erasure: Erasure, signed: SignedCertificate, reapply: CertifiedReapply): Promise<void> {
    await this.deps.ledger?.record(ledgerEntryOf(signed, reapply));
  }

  /** The audit entry the certificate is anchored to: written once, then read back on a retry. */
  private async auditAnchor(tenant: string, requestId: string, erasure: Erasure): Promise<AuditAnchor> {
    const existing = erasure.auditAnchor;
    if (existing) return existing;
    const { request } = erasure;
    const entry = await this.deps.audit.record({
      tenant,
      actor: request.requestedBy,
      subject: null,
      operation: 'erase',
      resourceIds: [`erasure/${requestId}`, 'certificate'],
      decision: { effect: 'allow', rule: `erasure:${request.reason}` },
      requestId,
    });
    const anchor = { seq: entry.seq, hash: entry.hash };
    await this.deps.store.saveAuditAnchor(erasure, anchor);
    return anchor;
  }

  /** What the certificate says was erased: each record by kind and keyed content fingerprint, with the counts of the purge. */
  private certifiedClosure(tenant: string, workset: Workset, outcome: CertifyOutcome) {
    const erased = new Set(outcome.set.recordIds);
    const records = workset.records
      .filter((r) => erased.has(r.id))
      .map((r) => ({ id: r.id, kind: r.kind, contentFingerprint: this.deps.fingerprints.content(tenant, r.text) }));
    const byKind: Partial<Record<MemoryKind, number>> = {};
    for (const r of records) byKind[r.kind] = (byKind[r.kind] ?? 0) + 1;
    return {
      size: records.length,
      byKind,
      records,
      events: outcome.set.eventIds.length,
      streamsDeleted: outcome.streamsDeleted,
      keysShredded: outcome.set.recordIds.length + outcome.set.eventIds.length,
      tombstones: outcome.tombstones,
    };
  }

  /**
   * The end of a request that gets no certificate (approval timeout, failed
   * verification, a refusal, a step that failed for good): the request key is
   * shredded at once, so its scope and its workset (texts and vectors kept for
   * verification) become unreadable like the records they came from. Recorded
   * once with one audit entry; a certified request is left as it is.
   */
  async abandon(tenant: string, requestId: string, outcome: string): Promise<{ shredded: boolean }> {
    const erasure = await this.deps.store.load(tenant, requestId);
    if (erasure.certificate) return { shredded: false };
    const { request } = erasure;
    if (!erasure.abandonment) {
      await this.deps.audit.record({
        tenant,
        actor: request.requestedBy,
        subject: null,
        operation: 'erase',
        resourceIds: [`erasure/${requestId}`, 'abandoned'],
        decision: { effect: 'deny', rule: `erasure:abandoned` },
        requestId,
      });
      // A failure code names no content; anything else is recorded as a plain failure.
      await this.deps.store.saveAbandonment(erasure, {
        outcome: /^[A-Z_]+\.[A-Z_]+$/.test(outcome) ? outcome : 'ERASURE.FAILED',
        at: this.now(),
      });
    }
    await this.deps.vault.shred(tenant, [ErasureStore.keyId(requestId)]);
    return { shredded: true };
  }

  /**
   * Abandons every request whose workset has waited longer than its tenant's
   * approval timeout plus `erasure.worksetRetentionDays` without a
   * certificate: a workflow that was terminated, or lost, leaves no live key
   * behind. The approval timeout is added so a request still awaiting approval
   * keeps what it needs.
   */
  async expireWorksets(asOf: string): Promise<{ expired: number }> {
    let expired = 0;
    for await (const workset of this.deps.store.openWorksets()) {
      const { erasure } = await this.deps.policies.get(workset.tenant);
      const keepMs = (erasure.approvalTimeoutHours + erasure.worksetRetentionDays * 24) * 3_600_000;
      if (workset.capturedAt.getTime() + keepMs > Date.parse(asOf)) continue;
      await this.abandon(workset.tenant, workset.requestId, 'ERASURE.WORKSET_EXPIRED');
      expired++;
    }
    return { expired };
  }

  /**
   * A subject is named by its pseudonym, never its id. One is created for a
   * subject that never wrote, so that every certificate reads alike and
   * says nothing about whether the subject had records.
   */
  private async certifiedScope(tenant: string, scope: ErasureScope): Promise<CertifiedScope> {
    const pseudonymOf = async (subject: string) =>
      (await this.deps.vault.subjectPseudonyms(tenant, [subject], { create: true })).get(subject)!;
    switch (scope.type) {
      case 'subject':
        return { type: 'subject', subjectPseudonym: await pseudonymOf(scope.subject) };
      case 'time_range':
        return {
          type: 'time_range',
          from: scope.from,
          to: scope.to,
          ...(scope.subject ? { subjectPseudonym: await pseudonymOf(scope.subject) } : {}),
        };
      default:
        return scope;
    }
  }

  /**
   * A subject erased whole loses its pseudonym: after this nobody can tell
   * which streams, holds or certificate were theirs, and a later write starts
   * a fresh pseudonym. Kept while any record of the subject is left (held,
   * or not the caller's to erase), or while an active hold names the subject
   * (the hold must still find them). A time range erases part of a subject: kept too.
   */
  private async forgetErasedSubject(tenant: string, scope: ErasureScope, held: HeldRecord[]): Promise<void> {
    if (scope.type !== 'subject' || (await keepsPseudonym(this.deps, tenant, scope, held.length))) return;
    await this.deps.vault.forgetSubject(tenant, scope.subject);
  }

  private now(): string {
    return this.deps.clock.now().toISOString();
  }
}
