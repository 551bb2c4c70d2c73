import {
  ROLES,
  CreateErasureRequest,
  DomainError,
  ERASURE_STEPS,
  EXTRACTION_RULE,
  ErasureCertificate,
  ErasureNotFound,
  PolicyDenied,
  deletionClosure,
  evaluate,
  isHeld,
  parseOrThrow,
  resourceOf,
  subjectOf,
  streams,
  isLegacySubjectStream,
  parseStreamName,
  tokenize,
  type CertifiedScope,
  type Clock,
  type ErasureReason,
  type ErasureScope,
  type ErasureStep,
  type EventLog,
  type IdSource,
  IN_PLACE_COMPACTION,
  type LogCompaction,
  type LogCompactionReport,
  type HoldTarget,
  type KeyVault,
  type LineageEntry,
  type MemoryIndex,
  type MemoryKind,
  type MemoryRecord,
  type Principal,
  type SignedCertificate,
  type StepRecord,
  type Verification,
} from '@elma/domain';
import type { AuditLog } from '../audit/audit-log';
import type { CertificateSigner } from '../certificate/signing';
import type { LegalHolds } from '../legal-hold/legal-holds';
import type { PolicyStore } from '../policy/policy-store';
import type { Projection } from '../projection/projection';
import type { ProjectionRunner } from '../projection/runner';
import { ErasureStore, type ErasureRequestRecord, type Requester, type Workset } from './erasure-store';
import { ErasureOutbox, type ErasureStart } from './erasure-outbox';
import type { ErasureFingerprints } from './fingerprints';
import type { Tombstones } from './tombstones';
import { ErasureVerifier } from './verification';

/** Roles that may request any erasure (the tenant policy's `erase` rules decide the rest). */
export const ERASURE_ROLES = ROLES.erasure;
/** Who may read an erasure's progress and certificate besides its requester. */
const READER_ROLES: readonly string[] = ROLES.erasureReader;
/** The actor of erasures the system starts itself (the retention sweep). */
export const RETENTION_ACTOR = 'system:retention';

/** How a step's activity attempt went, as Temporal reports it. */
export interface StepAttempt {
  attempt: number;
  /** When the step was first scheduled (ISO). */
  startedAt: string;
}

export interface ErasureSettings {
  approvalThreshold: number;
  approvalTimeoutMs: number;
}

export interface EraseSet {
  recordIds: string[];
  eventIds: string[];
}

export interface HeldRecord {
  recordId: string;
  holdIds: string[];
}

export class ErasureForbidden extends DomainError {
  constructor() {
    super('AUTH.FORBIDDEN', 'this erasure needs the compliance or dpo role, or a data subject asking for their own records');
  }
}

/**
 * The work behind each step of `ErasureWorkflow` (issue 4). Every method is
 * idempotent: it may run again after a crash or a retry and converges to the
 * same state, and records its step in the erasure stream (plus one audit
 * entry) only the first time. Arguments and results are ids and counts only:
 * they travel through Temporal histories, which erasure cannot reach.
 */
export class ErasureService {
  readonly store: ErasureStore;
  private readonly outbox: ErasureOutbox;
  private readonly verifier: ErasureVerifier;

  constructor(
    private readonly deps: {
      log: EventLog;
      index: MemoryIndex;
      vault: KeyVault;
      sealer: ConstructorParameters<typeof ErasureStore>[0]['sealer'];
      projection: Projection;
      runner: ProjectionRunner;
      holds: LegalHolds;
      policies: PolicyStore;
      audit: AuditLog;
      tombstones: Tombstones;
      fingerprints: ErasureFingerprints;
      signer: CertificateSigner;
      clock: Clock;
      ids: IdSource;
      /** Folders and files the byte scan covers (data folder, Temporal database). */
      scanRoots: string[];
      /** The event log's engine, as the certificate names it. */
      logEngine: string;
      /** The log's lazy physical deletion (EventStoreDB scavenge) and how long verification waits for it; absent for a log that deletes in place. */
      compaction?: { port: LogCompaction; waitMs: number };
    },
  ) {
    this.store = new ErasureStore({ log: deps.log, sealer: deps.sealer });
    this.outbox = new ErasureOutbox({ log: deps.log });
    this.verifier = new ErasureVerifier({ index: deps.index, vault: deps.vault, scanRoots: deps.scanRoots });
  }

  // ---- requests (API side) ----------------------------------------------------------------------------

  /**
   * Validates and stores a request; the caller then starts the workflow and
   * reports it with `workflowStarted`. A `content` scope becomes a keyed
   * fingerprint here and the text goes no further. The start is queued in the
   * outbox before the request is stored, so a request never sits stored
   * without a workflow: `startPending` finds any whose start did not happen.
   */
  async request(principal: Principal, body: unknown, httpRequestId: string): Promise<{ requestId: string; reason: ErasureReason }> {
    const input = parseOrThrow(CreateErasureRequest, body);
    const privileged = principal.roles.some((r) => (ERASURE_ROLES as readonly string[]).includes(r));
    const ownRecords = input.scope.type === 'subject' && input.scope.subject === principal.sub && input.reason === 'subject_request';
    if (!privileged && !ownRecords) {
      await this.auditRequest(principal, 'deny', 'role:compliance|dpo', ['erasure'], httpRequestId);
      throw new ErasureForbidden();
    }
    const scope: ErasureScope =
      input.scope.type === 'content'
        ? { type: 'fingerprint', fingerprint: this.deps.fingerprints.content(principal.tenant, input.scope.text) }
        : input.scope;
    const requestId = `era_${this.deps.ids.next()}`;
    await this.outbox.queue({ tenant: principal.tenant, requestId, reason: input.reason });
    await this.store.create(
      {
        requestId,
        tenant: principal.tenant,
        reason: input.reason,
        requestedBy: requesterOf(principal),
        requestedAt: this.deps.clock.now().toISOString(),
      },
      scope,
    );
    await this.auditRequest(principal, 'allow', privileged ? 'role:erasure' : 'self-service', [`erasure/${requestId}`], httpRequestId);
    return { requestId, reason: input.reason };
  }

  /** Closes the request's outbox entry once Temporal has its workflow. */
  async workflowStarted(tenant: string, requestId: string): Promise<void> {
    await this.outbox.started(tenant, requestId);
  }

  /**
   * Starts the workflow of every queued request that has none yet (Temporal
   * was unreachable, or the process died between storing and starting).
   * `start` must be idempotent by request id. An entry whose request was
   * never stored (the process died in between) is closed without a start.
   * Stops at the first failed start: Temporal is likely down, the rest waits
   * for the next drain.
   */
  async startPending(start: (entry: ErasureStart) => Promise<void>): Promise<{ started: number; pending: number }> {
    const pending = await this.outbox.pending();
    let started = 0;
    for (const entry of pending) {
      if (await this.store.exists(entry.tenant, entry.requestId)) {
        try {
          await start(entry);
        } catch {
          return { started, pending: pending.length - started };
        }
      }
      await this.outbox.started(entry.tenant, entry.requestId);
      started++;
    }
    return { started, pending: 0 };
  }

  /** The retention sweep's request for one tenant and run; idempotent by its id. */
  async requestRetention(tenant: string, requestId: string, asOf: string): Promise<void> {
    if (await this.store.exists(tenant, requestId)) return;
    await this.store.create(
      {
        requestId,
        tenant,
        reason: 'retention',
        requestedBy: { sub: RETENTION_ACTOR, roles: ['system'], clearance: 'restricted' },
        requestedAt: this.deps.clock.now().toISOString(),
      },
      { type: 'expired', asOf },
    );
  }

  /** Throws `ErasureNotFound` unless the caller may follow this erasure (requester or reader roles). */
  async readable(principal: Principal, requestId: string): Promise<ErasureRequestRecord> {
    const request = await this.store.request(principal.tenant, requestId);
    if (request.requestedBy.sub !== principal.sub && !principal.roles.some((r) => READER_ROLES.includes(r))) {
      throw new ErasureNotFound(requestId);
    }
    return request;
  }

  async certificate(principal: Principal, requestId: string): Promise<SignedCertificate | undefined> {
    await this.readable(principal, requestId);
    return this.store.certificate(principal.tenant, requestId);
  }

  /** Tenants with records (the retention sweep visits each). */
  tenants(): Promise<string[]> {
    return this.deps.index.tenants();
  }

  /** Expired records not on hold, as the retention sweep sees them at `asOf`. */
  async countExpired(tenant: string, asOf: string): Promise<number> {
    const holds = await this.deps.holds.list(tenant, { fresh: true });
    let n = 0;
    for await (const entry of this.deps.index.lineage(tenant)) if (isExpired(entry, asOf) && !isHeld(heldView(entry), holds)) n++;
    return n;
  }

  // ---- steps ----------------------------------------------------------------------------------------

  /**
   * Step 1. Tenant-level permission from the policy's `erase` rules; or, for a
   * data subject's own request, permission checked per record at `locate`.
   */
  async authorize(tenant: string, requestId: string, at: StepAttempt): Promise<ErasureSettings & { perRecord: boolean }> {
    const request = await this.store.request(tenant, requestId);
    const policy = await this.deps.policies.get(tenant);
    const settings = {
      approvalThreshold: policy.erasure.approvalThreshold,
      approvalTimeoutMs: Math.round(policy.erasure.approvalTimeoutHours * 3_600_000),
    };
    let perRecord = false;
    if (request.requestedBy.sub === RETENTION_ACTOR) {
      if (request.reason !== 'retention') throw new PolicyDenied('erase', 'system-retention-only');
      // Expiry applies the tenant's own retention policy: nobody is asked to approve it again.
      settings.approvalThreshold = Number.MAX_SAFE_INTEGER;
    } else {
      const decision = evaluate(policy, subjectOf(request.requestedBy), null, { now: this.now() }, 'erase');
      if (!decision.allowed) {
        const scope = await this.store.scope(tenant, requestId);
        if (!(scope.type === 'subject' && scope.subject === request.requestedBy.sub)) throw new PolicyDenied('erase', decision.ruleId);
        perRecord = true;
      }
    }
    await this.complete(tenant, requestId, request, 'authorize', at, { perRecord: perRecord ? 1 : 0 });
    return { ...settings, perRecord };
  }

  /** Step 2. The seed records of the scope. Waits for the projection first, so a just-ingested event is found. */
  async locate(tenant: string, requestId: string, perRecord: boolean, at: StepAttempt): Promise<{ seeds: string[] }> {
    const request = await this.store.request(tenant, requestId);
    const scope = await this.store.scope(tenant, requestId);
    if (this.deps.runner.running) await this.deps.runner.waitFor(await this.deps.log.headPosition(), 60_000);
    const seeds: string[] = [];
    if (scope.type === 'fingerprint') {
      // Only content can match a content fingerprint: the one scope that reads every record whole.
      for await (const record of this.deps.index.records(tenant)) {
        if (this.deps.fingerprints.content(tenant, record.content.text) === scope.fingerprint) seeds.push(record.id);
      }
    } else if (scope.type === 'records') {
      for (const id of new Set(scope.recordIds)) if (await this.deps.index.get(tenant, id)) seeds.push(id);
    } else {
      for await (const entry of this.deps.index.lineage(tenant)) if (inScope(entry, scope)) seeds.push(entry.id);
    }
    if (perRecord) {
      const policy = await this.deps.policies.get(tenant);
      for (const id of seeds) {
        const stored = await this.deps.index.get(tenant, id);
        if (!stored) continue;
        const decision = evaluate(policy, subjectOf(request.requestedBy), resourceOf(stored.record), { now: this.now() }, 'erase');
        if (!decision.allowed) throw new PolicyDenied('erase', decision.ruleId);
      }
    }
    await this.complete(tenant, requestId, request, 'locate', at, { seeds: seeds.length });
    return { seeds };
  }

  /**
   * Step 3. D*(seeds) over the lineage DAG, plus the ingested events the
   * closure's extracted records came from. Captures what verification will
   * need once the records are gone (sealed in the erasure stream).
   */
  async closure(tenant: string, requestId: string, seeds: string[], at: StepAttempt): Promise<EraseSet> {
    const request = await this.store.request(tenant, requestId);
    const kept = await this.store.workset(tenant, requestId);
    if (kept) {
      // A retry after the capture: the index may already be purged, so the captured closure is the truth.
      await this.complete(tenant, requestId, request, 'closure', at, { records: kept.records.length, events: Object.keys(kept.eventStreams).length });
      return { recordIds: kept.records.map((r) => r.id), eventIds: Object.keys(kept.eventStreams) };
    }
    const nodes: LineageEntry[] = [];
    for await (const entry of this.deps.index.lineage(tenant)) nodes.push(entry);
    const scope = await this.store.scope(tenant, requestId);
    const found = deletionClosure(seeds, nodes);
    // Expiry is per record: a view that outlives its inputs by its own retention (a promoted working
    // memory, an explicit write) keeps it; a view that expires with them (consolidation) goes with them.
    const expired = new Set(scope.type === 'expired' ? nodes.filter((n) => isExpired(n, scope.asOf)).map((n) => n.id) : []);
    const closure =
      scope.type === 'expired'
        ? { ...found, recordIds: found.recordIds.filter((id) => expired.has(id)) }
        : found;
    const byId = new Map(nodes.map((r) => [r.id, r]));
    const records = await Promise.all(
      closure.recordIds.map(async (id) => {
        const stored = (await this.deps.index.get(tenant, id))!;
        const record = stored.record;
        return {
          id,
          kind: record.kind,
          subject: record.subject,
          text: record.content.text,
          terms: distinctiveTerms(record),
          vector: Buffer.from(stored.vector.buffer, stored.vector.byteOffset, stored.vector.byteLength).toString('base64'),
        };
      }),
    );
    const eventStreams: Record<string, string> = {};
    const extractedFrom = new Map<string, string>();
    for (const eventId of closure.eventIds) {
      const extracted = closure.recordIds.map((id) => byId.get(id)!).find((r) => r.rule === EXTRACTION_RULE && r.sourceEventIds.includes(eventId));
      if (extracted) extractedFrom.set(eventId, extracted.subject);
    }
    // Event streams are named by the subject's pseudonym; a subject without one has no stream left.
    const pseudonyms = await this.deps.vault.subjectPseudonyms(tenant, [...extractedFrom.values()], { create: false });
    for (const [eventId, subject] of extractedFrom) {
      const pseudonym = pseudonyms.get(subject);
      if (pseudonym) eventStreams[eventId] = streams.events(tenant, pseudonym);
    }
    const workset: Workset = { records, eventStreams };
    await this.store.saveWorkset(tenant, requestId, workset);
    await this.complete(tenant, requestId, request, 'closure', at, { records: records.length, events: closure.eventIds.length });
    return { recordIds: closure.recordIds, eventIds: closure.eventIds };
  }

  /**
   * Step 4. Records a legal hold covers are restricted instead of erased
   * (recall already withholds them from everyone but `legal`), and so are the
   * events they were extracted from: the hold preserves the original.
   */
  async legalHoldCheck(tenant: string, requestId: string, closure: EraseSet, at: StepAttempt): Promise<EraseSet & { held: HeldRecord[] }> {
    const request = await this.store.request(tenant, requestId);
    const holds = await this.deps.holds.list(tenant, { fresh: true });
    const held: HeldRecord[] = [];
    const keptEvents = new Set<string>();
    for (const id of closure.recordIds) {
      const stored = await this.deps.index.get(tenant, id);
      if (!stored) continue;
      const covering = holds.filter((h) => isHeld(stored.record, [h])).map((h) => h.id);
      if (covering.length === 0) continue;
      held.push({ recordId: id, holdIds: covering });
      if (stored.record.provenance.rule === EXTRACTION_RULE) stored.record.provenance.sourceEventIds.forEach((e) => keptEvents.add(e));
    }
    const heldIds = new Set(held.map((h) => h.recordId));
    const result = {
      recordIds: closure.recordIds.filter((id) => !heldIds.has(id)),
      eventIds: closure.eventIds.filter((id) => !keptEvents.has(id)),
      held,
    };
    await this.complete(tenant, requestId, request, 'legal_hold', at, { held: held.length, erasable: result.recordIds.length });
    return result;
  }

  /** Step 5, recorded once the approval is settled (not needed, or given). */
  async recordApproval(tenant: string, requestId: string, approval: { required: boolean; approvedBy?: string; startedAt: string }, at: StepAttempt) {
    const request = await this.store.request(tenant, requestId);
    await this.complete(tenant, requestId, request, 'approval', { ...at, startedAt: approval.startedAt }, { required: approval.required ? 1 : 0 });
  }

  /** Step 6: rows, vectors and FTS entries physically, then the WAL checkpointed (the SQLite adapter does both). */
  async purgeIndex(tenant: string, requestId: string, set: EraseSet, at: StepAttempt): Promise<{ purged: number }> {
    const request = await this.store.request(tenant, requestId);
    const before = await this.deps.index.count(tenant);
    await this.deps.index.purge(tenant, set.recordIds);
    const purged = before - (await this.deps.index.count(tenant));
    await this.complete(tenant, requestId, request, 'purge_index', at, { purged });
    return { purged };
  }

  /** Step 7: what this process keeps in memory about the records. */
  async purgeCaches(tenant: string, requestId: string, set: EraseSet, at: StepAttempt): Promise<{ evicted: number }> {
    const request = await this.store.request(tenant, requestId);
    const evicted = this.deps.projection.forget(tenant, set.recordIds);
    await this.complete(tenant, requestId, request, 'purge_caches', at, { evicted });
    return { evicted };
  }

  /** Step 8: crypto-shredding; every copy of the ciphertext (log, replicas, backups) becomes unreadable. */
  async shredKeys(tenant: string, requestId: string, set: EraseSet, at: StepAttempt): Promise<{ shredded: number }> {
    const request = await this.store.request(tenant, requestId);
    const keyIds = [...set.recordIds, ...set.eventIds];
    await this.deps.vault.shred(tenant, keyIds);
    await this.complete(tenant, requestId, request, 'shred_keys', at, { shredded: keyIds.length });
    return { shredded: keyIds.length };
  }

  /**
   * Step 9: each erased record's memory stream, and each event stream whose
   * events are all erased. An event stream that also holds kept events stays;
   * its erased events are ciphertext under shredded keys.
   */
  async deleteStreams(tenant: string, requestId: string, set: EraseSet, at: StepAttempt): Promise<{ deleted: number; shreddedInPlace: number }> {
    const request = await this.store.request(tenant, requestId);
    const workset = await this.workset(tenant, requestId);
    const erasedEvents = new Set(set.eventIds);
    const candidates = new Set(await this.currentStreamNames(tenant, set.eventIds.map((id) => workset.eventStreams[id]).filter(Boolean)));
    let deleted = 0;
    let shreddedInPlace = 0;
    for (const stream of candidates) {
      let all = true;
      let erasedHere = 0;
      for await (const event of this.deps.log.readStream(stream)) {
        if (erasedEvents.has(event.id)) erasedHere++;
        else all = false;
      }
      if (all) {
        await this.deps.log.deleteStream(stream);
        deleted++;
      } else shreddedInPlace += erasedHere;
    }
    for (const id of set.recordIds) {
      await this.deps.log.deleteStream(streams.memory(tenant, id));
      deleted++;
    }
    // A tombstone hides the events; only a scavenge removes them from the log's files.
    if (this.deps.compaction && deleted > 0) await this.deps.compaction.port.request();
    await this.complete(tenant, requestId, request, 'delete_streams', at, { deleted, shreddedInPlace });
    return { deleted, shreddedInPlace };
  }

  /**
   * Step 10: keyed fingerprints of each erased record's content for its subject, which ingest and consolidation
   * refuse; and of the content alone, which they refuse for every subject when the tenant's policy says so.
   * Both are written whatever the policy says today, so a later switch covers this erasure too.
   */
  async writeTombstones(tenant: string, requestId: string, set: EraseSet, at: StepAttempt): Promise<{ tombstones: number }> {
    const request = await this.store.request(tenant, requestId);
    const workset = await this.workset(tenant, requestId);
    const erased = new Set(set.recordIds);
    const records = workset.records.filter((r) => erased.has(r.id));
    const fingerprints = [...new Set(records.map((r) => this.deps.fingerprints.tombstone(tenant, r.subject, r.text)))];
    const tenantWide = [...new Set(records.map((r) => this.deps.fingerprints.tenantTombstone(tenant, r.text)))];
    await this.deps.tombstones.write(tenant, requestId, [...fingerprints, ...tenantWide]);
    await this.complete(tenant, requestId, request, 'tombstones', at, { tombstones: fingerprints.length });
    return { tombstones: fingerprints.length };
  }

  /** Step 11: every probe for every erased record. Records the step only when all pass. */
  async verify(tenant: string, requestId: string, set: EraseSet, round: number, at: StepAttempt): Promise<Verification> {
    const request = await this.store.request(tenant, requestId);
    const workset = await this.workset(tenant, requestId);
    const erased = new Set(set.recordIds);
    const verification = await this.verifier.verify(
      tenant,
      workset.records.filter((r) => erased.has(r.id)),
      [...set.recordIds, ...set.eventIds],
      round,
    );
    verification.logCompaction = await this.logCompaction(tenant, requestId);
    if (verification.passed) {
      await this.complete(tenant, requestId, request, 'verify', at, {
        rounds: verification.rounds,
        files: verification.byteScan.files,
      });
    }
    return verification;
  }

  /**
   * Step 12: the closing audit entry, the certificate (signed with Ed25519 and
   * anchored to that entry), and last the request key's shredding, which
   * makes the scope and workset unreadable. Idempotent: a stored certificate
   * is returned as it is.
   */
  async certify(
    tenant: string,
    requestId: string,
    outcome: { set: EraseSet; held: HeldRecord[]; verification: Verification; approvedBy: string | null; approvedAt: string | null; streamsDeleted: number; tombstones: number },
    at: StepAttempt,
  ): Promise<{ keyId: string; signature: string }> {
    const existing = await this.store.certificate(tenant, requestId);
    if (existing) {
      // A retry after the certificate was saved: finish what followed it. The scope is readable until the request key goes.
      if (!(await this.deps.vault.isShredded(tenant, ErasureStore.keyId(requestId)))) {
        await this.forgetErasedSubject(tenant, await this.store.scope(tenant, requestId), outcome.held);
      }
      await this.deps.vault.shred(tenant, [ErasureStore.keyId(requestId)]);
      return { keyId: existing.signature.kid, signature: existing.signature.value };
    }
    const request = await this.store.request(tenant, requestId);
    const scope = await this.store.scope(tenant, requestId);
    const workset = await this.workset(tenant, requestId);
    await this.complete(tenant, requestId, request, 'certify', at, { records: outcome.set.recordIds.length });

    let anchor = await this.store.auditAnchor(tenant, requestId);
    if (!anchor) {
      const entry = await this.deps.audit.record({
        tenant,
        actor: request.requestedBy.sub,
        subject: null,
        operation: 'erase',
        resourceIds: [`erasure/${requestId}`, 'certificate'],
        decision: { effect: 'allow', rule: `erasure:${request.reason}` },
        requestId,
      });
      anchor = { seq: entry.seq, hash: entry.hash };
      await this.store.saveAuditAnchor(tenant, requestId, anchor);
    }

    const erased = new Set(outcome.set.recordIds);
    const records = workset.records
      .filter((r) => erased.has(r.id))
      .map((r) => ({ id: r.id, kind: r.kind, contentFingerprint: this.deps.fingerprints.content(tenant, r.text) }));
    const byKind: Partial<Record<MemoryKind, number>> = {};
    for (const r of records) byKind[r.kind] = (byKind[r.kind] ?? 0) + 1;
    const steps = await this.store.steps(tenant, requestId);
    const certifiedScope = await this.certifiedScope(tenant, scope);
    // A data subject erasing their own records is named by the pseudonym too, not by their token's subject.
    const selfService = scope.type === 'subject' && certifiedScope.type === 'subject' && request.requestedBy.sub === scope.subject;
    const certificate = ErasureCertificate.parse({
      type: 'elma.erasure-certificate',
      version: 1,
      tenant,
      requestId,
      request: {
        requestedBy: selfService ? certifiedScope.subjectPseudonym : request.requestedBy.sub,
        requestedAt: request.requestedAt,
        reason: request.reason,
        scope: certifiedScope,
        approvedBy: outcome.approvedBy,
        approvedAt: outcome.approvedAt,
      },
      closure: {
        size: records.length,
        byKind,
        records,
        events: outcome.set.eventIds.length,
        streamsDeleted: outcome.streamsDeleted,
        keysShredded: outcome.set.recordIds.length + outcome.set.eventIds.length,
        tombstones: outcome.tombstones,
      },
      legalHoldExceptions: outcome.held,
      steps: ERASURE_STEPS.flatMap((step) => {
        const record = steps.get(step);
        return record ? [{ step, startedAt: record.startedAt, finishedAt: record.finishedAt, attempts: record.attempts }] : [];
      }),
      verification: outcome.verification,
      auditAnchor: anchor,
      issuedAt: steps.get('certify')!.finishedAt,
      keyId: this.deps.signer.keyId,
    });
    const signed = this.deps.signer.sign(certificate);
    await this.store.saveCertificate(tenant, requestId, signed);
    await this.forgetErasedSubject(tenant, scope, outcome.held);
    await this.deps.vault.shred(tenant, [ErasureStore.keyId(requestId)]);
    return { keyId: signed.signature.kid, signature: signed.signature.value };
  }

  /**
   * The end of a request that gets no certificate (approval timeout, failed
   * verification, a refusal, a step that failed for good): the request key is
   * shredded at once, so its scope and its workset (texts and vectors kept for
   * verification) become unreadable like the records they came from. Recorded
   * once with one audit entry; a certified request is left as it is.
   */
  async abandon(tenant: string, requestId: string, outcome: string): Promise<{ shredded: boolean }> {
    if (await this.store.certificate(tenant, requestId)) return { shredded: false };
    const request = await this.store.request(tenant, requestId);
    if (!(await this.store.abandonment(tenant, requestId))) {
      await this.deps.audit.record({
        tenant,
        actor: request.requestedBy.sub,
        subject: null,
        operation: 'erase',
        resourceIds: [`erasure/${requestId}`, 'abandoned'],
        decision: { effect: 'deny', rule: `erasure:abandoned` },
        requestId,
      });
      // A failure code names no content; anything else is recorded as a plain failure.
      await this.store.saveAbandonment(tenant, requestId, { outcome: /^[A-Z_]+\.[A-Z_]+$/.test(outcome) ? outcome : 'ERASURE.FAILED', at: this.now() });
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
    for await (const workset of this.store.openWorksets()) {
      const { erasure } = await this.deps.policies.get(workset.tenant);
      const keepMs = (erasure.approvalTimeoutHours + erasure.worksetRetentionDays * 24) * 3_600_000;
      if (workset.capturedAt.getTime() + keepMs > Date.parse(asOf)) continue;
      await this.abandon(workset.tenant, workset.requestId, 'ERASURE.WORKSET_EXPIRED');
      expired++;
    }
    return { expired };
  }

  // ---- helpers ----------------------------------------------------------------------------------------

  /**
   * Whether the deleted streams are gone from the log's files: at once for a
   * log that deletes in place; for EventStoreDB, the first scavenge started
   * after the deletions, waited for a while. Recorded either way, never a failure.
   */
  private async logCompaction(tenant: string, requestId: string): Promise<LogCompactionReport> {
    const compaction = this.deps.compaction;
    const engine = this.deps.logEngine;
    if (!compaction) return IN_PLACE_COMPACTION(engine);
    const deletedAt = (await this.store.steps(tenant, requestId)).get('delete_streams')?.startedAt;
    if (!deletedAt) return { engine, method: 'scavenge', requested: false, completed: false, result: 'no streams deleted' };
    const deadline = Date.now() + compaction.waitMs;
    for (;;) {
      const report = await compaction.port.report(new Date(deletedAt));
      if (report.completed || Date.now() >= deadline) return report;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /**
   * A subject is named by its pseudonym, never its id. One is created for a
   * subject that never wrote, so that every certificate reads alike and
   * says nothing about whether the subject had records.
   */
  private async certifiedScope(tenant: string, scope: ErasureScope): Promise<CertifiedScope> {
    const pseudonymOf = async (subject: string) => (await this.deps.vault.subjectPseudonyms(tenant, [subject], { create: true })).get(subject)!;
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
    if (scope.type !== 'subject' || held.length > 0) return;
    const holds = await this.deps.holds.list(tenant, { fresh: true });
    if (holds.some((hold) => hold.scope.subjects?.includes(scope.subject))) return;
    for await (const entry of this.deps.index.lineage(tenant)) if (inScope(entry, scope)) return;
    await this.deps.vault.forgetSubject(tenant, scope.subject);
  }

  /** A workset captured before the data folder's pseudonym migration names old `events-{tenant}-{subject}` streams: their new names. */
  private async currentStreamNames(tenant: string, names: string[]): Promise<string[]> {
    const legacy = names.filter(isLegacySubjectStream);
    if (legacy.length === 0) return names;
    const subjectOf = (name: string) => parseStreamName(name)!.id;
    const pseudonyms = await this.deps.vault.subjectPseudonyms(tenant, legacy.map(subjectOf), { create: false });
    return names.flatMap((name) => {
      if (!isLegacySubjectStream(name)) return [name];
      const pseudonym = pseudonyms.get(subjectOf(name));
      return pseudonym ? [streams.events(tenant, pseudonym)] : [];
    });
  }

  private async workset(tenant: string, requestId: string): Promise<Workset> {
    const workset = await this.store.workset(tenant, requestId);
    if (!workset) throw new DomainError('ERASURE.NO_WORKSET', `erasure ${requestId} has no captured closure`, { requestId });
    return workset;
  }

  /** Records a step once, with one audit entry; a repeated call (a retry) changes nothing. */
  private async complete(
    tenant: string,
    requestId: string,
    request: ErasureRequestRecord,
    step: ErasureStep,
    at: StepAttempt,
    counts: Record<string, number>,
  ): Promise<void> {
    const record: StepRecord = { step, startedAt: at.startedAt, finishedAt: this.now(), attempts: at.attempt, counts };
    const steps = await this.store.steps(tenant, requestId);
    if (steps.has(step)) return;
    await this.deps.audit.record({
      tenant,
      actor: request.requestedBy.sub,
      subject: null,
      operation: 'erase',
      resourceIds: [`erasure/${requestId}`, `step/${step}`],
      decision: { effect: 'allow', rule: `erasure:${step}` },
      requestId,
    });
    await this.store.completeStep(tenant, requestId, record);
  }

  auditApproval(principal: Principal, requestId: string, effect: 'allow' | 'deny', rule: string, httpRequestId: string) {
    return this.auditRequest(principal, effect, rule, [`erasure/${requestId}`, 'approve'], httpRequestId);
  }

  auditCertificateExport(principal: Principal, requestId: string, httpRequestId: string) {
    return this.deps.audit.record({
      tenant: principal.tenant,
      actor: principal.sub,
      subject: null,
      operation: 'export',
      resourceIds: [`erasure/${requestId}`, 'certificate'],
      decision: { effect: 'allow', rule: 'erasure:certificate' },
      requestId: httpRequestId,
    });
  }

  private auditRequest(principal: Principal, effect: 'allow' | 'deny', rule: string, resourceIds: string[], requestId: string) {
    return this.deps.audit.record({
      tenant: principal.tenant,
      actor: principal.sub,
      subject: null,
      operation: 'erase',
      resourceIds,
      decision: { effect, rule },
      requestId,
    });
  }

  private now(): string {
    return this.deps.clock.now().toISOString();
  }
}

function requesterOf(principal: Principal): Requester {
  return {
    sub: principal.sub,
    roles: principal.roles,
    clearance: principal.clearance,
    ...(principal.project ? { project: principal.project } : {}),
    ...(principal.department ? { department: principal.department } : {}),
  };
}


function inScope(entry: LineageEntry, scope: Exclude<ErasureScope, { type: 'fingerprint' | 'records' }>): boolean {
  const ofSubject = (subject: string) => entry.subject === subject || entry.owner === subject;
  switch (scope.type) {
    case 'subject':
      return ofSubject(scope.subject);
    case 'time_range': {
      const at = Date.parse(entry.recordedAt);
      return at >= Date.parse(scope.from) && at < Date.parse(scope.to) && (scope.subject === undefined || ofSubject(scope.subject));
    }
    case 'expired':
      return isExpired(entry, scope.asOf);
  }
}

function isExpired(entry: LineageEntry, asOf: string): boolean {
  return entry.expiresAt !== null && Date.parse(entry.expiresAt) <= Date.parse(asOf);
}

/** What `isHeld` looks at, from a lineage entry. */
function heldView(entry: LineageEntry): HoldTarget {
  return {
    id: entry.id,
    subject: entry.subject,
    policy: { owner: entry.owner, project: entry.project },
    provenance: { parentIds: entry.parentIds, sourceEventIds: entry.sourceEventIds },
  };
}

/** The record's longest distinct words (length is a fair stand-in for rarity), for the BM25 probe. */
function distinctiveTerms(record: MemoryRecord): string[] {
  return [...new Set(tokenize(record.content.text))].sort((a, b) => b.length - a.length || a.localeCompare(b)).slice(0, 8);
}
