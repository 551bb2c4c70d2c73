import {
  EXTRACTION_RULE,
  PolicyDenied,
  deletionClosure,
  evaluate,
  isHeld,
  resourceOf,
  subjectOf,
  streams,
  isLegacySubjectStream,
  parseStreamName,
  tokenize,
  type Clock,
  type ErasureStep,
  type EventLog,
  IN_PLACE_COMPACTION,
  type LogCompaction,
  type LogCompactionReport,
  type KeyVault,
  type ErasureScope,
  type LineageEntry,
  type MemoryIndex,
  type MemoryRecord,
  type Verification,
} from '@elma/domain';
import type { AuditLog } from '../audit/audit-log';
import type { IndexedMemory, RawStoreScan } from '@elma/domain';
import type { LegalHolds } from '../governance/legal-holds';
import type { PolicyStore } from '../governance/policy-store';
import type { Projection } from '../views/projection';
import type { ProjectionRunner } from '../views/runner';
import {
  RETENTION_ACTOR,
  heldView,
  inScope,
  isExpired,
  keepsPseudonym,
  recordStep,
  requireWorkset,
  type EraseSet,
  type ErasureSettings,
  type HeldRecord,
  type StepAttempt,
} from './erasure-common';
import type { Erasure, ErasureStore, Workset } from './erasure-store';
import type { ErasureFingerprints } from './fingerprints';
import type { Tombstones } from './tombstones';
import { ErasureVerifier } from './verification';

/**
 * The work behind steps 1 to 11 of `ErasureWorkflow` (docs/architecture.md#erasure: authorize ... verify;
 * requests are `ErasureRequests`, the certificate `ErasureCertification`).
 * Every method is idempotent: it may run again after a crash or a retry and
 * converges to the same state, and records its step in the erasure stream
 * (plus one audit entry) only the first time. Each reads the erasure stream
 * once and decides on that fold. Arguments and results are ids and counts
 * only: they travel through Temporal histories, which erasure cannot reach.
 */
export class ErasureSteps {
  private readonly verifier: ErasureVerifier;

  constructor(
    private readonly deps: {
      log: EventLog;
      store: ErasureStore;
      index: MemoryIndex;
      vault: KeyVault;
      projection: Projection;
      runner: ProjectionRunner;
      holds: LegalHolds;
      policies: PolicyStore;
      audit: AuditLog;
      tombstones: Tombstones;
      fingerprints: ErasureFingerprints;
      clock: Clock;
      /** The byte scan over the raw store files, and the folders and files it covers (data folder, Temporal database). */
      rawScan: RawStoreScan;
      scanRoots: string[];
      /** The event log's engine, as the certificate names it. */
      logEngine: string;
      /** The log's lazy physical deletion (EventStoreDB scavenge) and how long verification waits for it; absent for a log that deletes in place. */
      compaction?: { port: LogCompaction; waitMs: number };
      /** Subject-access exports an erasure must delete with the subject or records they hold (absent: none are kept). */
      subjectExports?: { forgetExports(tenant: string, erased: { subject?: string; recordIds: readonly string[] }): Promise<number> };
    },
  ) {
    this.verifier = new ErasureVerifier({ index: deps.index, vault: deps.vault, rawScan: deps.rawScan, scanRoots: deps.scanRoots });
  }

  /**
   * Step 1. Tenant-level permission from the policy's `erase` rules; or, for a
   * data subject's own request, permission checked per record at `locate`.
   */
  async authorize(tenant: string, requestId: string, at: StepAttempt): Promise<ErasureSettings & { perRecord: boolean }> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const policy = await this.deps.policies.get(tenant);
    const settings = {
      approvalThreshold: policy.erasure.approvalThreshold,
      approvalTimeoutMs: Math.round(policy.erasure.approvalTimeoutHours * 3_600_000),
    };
    let perRecord = false;
    if (erasure.request.requestedBy.sub === RETENTION_ACTOR) {
      if (erasure.request.reason !== 'retention') throw new PolicyDenied('erase', 'system-retention-only');
      // Expiry applies the tenant's own retention policy: nobody is asked to approve it again.
      settings.approvalThreshold = Number.MAX_SAFE_INTEGER;
    } else {
      const decision = evaluate(policy, subjectOf(erasure.request.requestedBy), null, { now: this.now() }, 'erase');
      if (!decision.allowed) {
        const scope = await erasure.scope();
        if (!(scope.type === 'subject' && scope.subject === erasure.request.requestedBy.sub))
          throw new PolicyDenied('erase', decision.ruleId);
        perRecord = true;
      }
    }
    await this.complete(erasure, 'authorize', at, { perRecord: perRecord ? 1 : 0 });
    return { ...settings, perRecord };
  }

  /** Step 2. The seed records of the scope. Waits for the projection first, so a just-ingested event is found. */
  async locate(tenant: string, requestId: string, perRecord: boolean, at: StepAttempt): Promise<{ seeds: string[] }> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const scope = await erasure.scope();
    if (this.deps.runner.running) await this.deps.runner.waitFor(await this.deps.log.headPosition(), 60_000);
    const seeds: string[] = [];
    if (scope.type === 'fingerprint') {
      // Only content can match a content fingerprint: the one scope that reads every record whole.
      for await (const record of this.deps.index.records(tenant)) {
        if (this.deps.fingerprints.content(tenant, record.content.text) === scope.fingerprint) seeds.push(record.id);
      }
    } else if (scope.type === 'records') {
      const ids = [...new Set(scope.recordIds)];
      const stored = await this.storedMemories(tenant, ids);
      ids.forEach((id, i) => stored[i] && seeds.push(id));
    } else {
      // A subject's records are looked up by subject and owner (what `inScope` tests); other scopes read every entry.
      const subject = scope.type === 'expired' ? undefined : scope.subject;
      const entries =
        subject !== undefined ? await this.deps.index.lineageOf(tenant, { subjects: [subject] }) : this.deps.index.lineage(tenant);
      for await (const entry of entries) if (inScope(entry, scope)) seeds.push(entry.id);
    }
    if (perRecord) {
      const policy = await this.deps.policies.get(tenant);
      for (const stored of await this.storedMemories(tenant, seeds)) {
        if (!stored) continue;
        const decision = evaluate(policy, subjectOf(erasure.request.requestedBy), resourceOf(stored.record), { now: this.now() }, 'erase');
        if (!decision.allowed) throw new PolicyDenied('erase', decision.ruleId);
      }
    }
    await this.complete(erasure, 'locate', at, { seeds: seeds.length });
    return { seeds };
  }

  /**
   * Step 3. D*(seeds) over the lineage DAG, plus the ingested events the
   * closure's extracted records came from. Captures what verification will
   * need once the records are gone (sealed in the erasure stream).
   */
  async closure(tenant: string, requestId: string, seeds: string[], at: StepAttempt): Promise<EraseSet> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const kept = await erasure.workset();
    if (kept) {
      // A retry after the capture: the index may already be purged, so the captured closure is the truth.
      await this.complete(erasure, 'closure', at, { records: kept.records.length, events: Object.keys(kept.eventStreams).length });
      return { recordIds: kept.records.map((r) => r.id), eventIds: Object.keys(kept.eventStreams) };
    }
    const nodes = await this.reachable(tenant, seeds);
    const scope = await erasure.scope();
    const found = deletionClosure(seeds, nodes);
    // Expiry is per record: a view that outlives its inputs by its own retention (a promoted working
    // memory, an explicit write) keeps it; a view that expires with them (consolidation) goes with them.
    const expired = new Set(scope.type === 'expired' ? nodes.filter((n) => isExpired(n, scope.asOf)).map((n) => n.id) : []);
    const closure = scope.type === 'expired' ? { ...found, recordIds: found.recordIds.filter((id) => expired.has(id)) } : found;
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
          // Empty while the record waits for its vector (none was stored, so none is probed for).
          vector: stored.vector
            ? Buffer.from(stored.vector.buffer, stored.vector.byteOffset, stored.vector.byteLength).toString('base64')
            : '',
        };
      }),
    );
    const eventStreams: Record<string, string> = {};
    const extractedFrom = new Map<string, string>();
    for (const eventId of closure.eventIds) {
      const extracted = closure.recordIds
        .map((id) => byId.get(id)!)
        .find((r) => r.rule === EXTRACTION_RULE && r.sourceEventIds.includes(eventId));
      if (extracted) extractedFrom.set(eventId, extracted.subject);
    }
    // Event streams are named by the subject's pseudonym; a subject without one has no stream left.
    const pseudonyms = await this.deps.vault.subjectPseudonyms(tenant, [...extractedFrom.values()], { create: false });
    for (const [eventId, subject] of extractedFrom) {
      const pseudonym = pseudonyms.get(subject);
      if (pseudonym) eventStreams[eventId] = streams.events(tenant, pseudonym);
    }
    const workset: Workset = { records, eventStreams };
    await this.deps.store.saveWorkset(erasure, workset);
    await this.complete(erasure, 'closure', at, { records: records.length, events: closure.eventIds.length });
    return { recordIds: closure.recordIds, eventIds: closure.eventIds };
  }

  /**
   * Step 4. Records a legal hold covers are restricted instead of erased
   * (recall already withholds them from everyone but `legal`), and so are the
   * events they were extracted from: the hold preserves the original.
   */
  async legalHoldCheck(tenant: string, requestId: string, closure: EraseSet, at: StepAttempt): Promise<EraseSet & { held: HeldRecord[] }> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const holds = await this.deps.holds.list(tenant, { fresh: true });
    const held: HeldRecord[] = [];
    const keptEvents = new Set<string>();
    const closureMemories = await this.storedMemories(tenant, closure.recordIds);
    for (const [i, id] of closure.recordIds.entries()) {
      const stored = closureMemories[i];
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
    await this.complete(erasure, 'legal_hold', at, { held: held.length, erasable: result.recordIds.length });
    return result;
  }

  /**
   * The stored memories of `ids` (undefined where there is none), asked for all at once: the index answers
   * them in order, so a closure of thousands waits for one round trip, not one per record (the embedded
   * index is in a thread of its own, Elasticsearch behind HTTP).
   */
  private storedMemories(tenant: string, ids: readonly string[]): Promise<(IndexedMemory | undefined)[]> {
    return Promise.all(ids.map((id) => this.deps.index.get(tenant, id)));
  }

  /** Step 5, recorded once the approval is settled (not needed, or given). */
  async recordApproval(
    tenant: string,
    requestId: string,
    approval: { required: boolean; approvedBy?: string; startedAt: string },
    at: StepAttempt,
  ) {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    await this.complete(erasure, 'approval', { ...at, startedAt: approval.startedAt }, { required: approval.required ? 1 : 0 });
  }

  /** Step 6: rows, vectors and FTS entries physically, then the WAL checkpointed (the SQLite adapter does both). */
  async purgeIndex(tenant: string, requestId: string, set: EraseSet, at: StepAttempt): Promise<{ purged: number }> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const before = await this.deps.index.count(tenant);
    await this.deps.index.purge(tenant, set.recordIds);
    const purged = before - (await this.deps.index.count(tenant));
    await this.complete(erasure, 'purge_index', at, { purged });
    return { purged };
  }

  /** Step 7: what this process keeps in memory about the records. */
  async purgeCaches(tenant: string, requestId: string, set: EraseSet, at: StepAttempt): Promise<{ evicted: number }> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const evicted = this.deps.projection.forget(tenant, set.recordIds);
    await this.complete(erasure, 'purge_caches', at, { evicted });
    return { evicted };
  }

  /** Step 8: crypto-shredding; every copy of the ciphertext (log, replicas, backups) becomes unreadable. */
  async shredKeys(tenant: string, requestId: string, set: EraseSet, at: StepAttempt): Promise<{ shredded: number }> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const keyIds = [...set.recordIds, ...set.eventIds];
    await this.deps.vault.shred(tenant, keyIds);
    // A subject-access export is a copy of the subject's records: it goes with them (its key is shredded).
    if (this.deps.subjectExports) {
      const scope = await erasure.scope();
      const subject = scope.type === 'subject' ? { subject: scope.subject } : {};
      await this.deps.subjectExports.forgetExports(tenant, { ...subject, recordIds: set.recordIds });
    }
    await this.complete(erasure, 'shred_keys', at, { shredded: keyIds.length });
    return { shredded: keyIds.length };
  }

  /**
   * Step 9: first what was derived from the set after its closure was captured (see `eraseLateDerived`); then
   * each erased record's memory stream, and each event stream whose events are all erased and whose subject
   * loses its pseudonym. An event stream that also holds kept events stays, and so does one whose subject
   * keeps its pseudonym (held records, an active hold, records left, an erasure by other than subject): the
   * subject's next write goes to the stream its pseudonym names, and a deleted stream refuses writes for good.
   * Their erased events are ciphertext under shredded keys.
   */
  async deleteStreams(
    tenant: string,
    requestId: string,
    set: EraseSet,
    at: StepAttempt,
  ): Promise<{ deleted: number; shreddedInPlace: number }> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const workset = await requireWorkset(erasure);
    const scope = await erasure.scope();
    const lateDerived = await this.eraseLateDerived(tenant, scope, workset, set);
    const erasedRecords = new Set(set.recordIds);
    const held = workset.records.filter((r) => !erasedRecords.has(r.id)).length;
    const forgotten = scope.type === 'subject' && !(await keepsPseudonym(this.deps, tenant, scope, held));
    const erasedEvents = new Set(set.eventIds);
    const candidates = new Set(await this.currentStreamNames(tenant, set.eventIds.map((id) => workset.eventStreams[id]).filter(Boolean)));
    const doomed: string[] = [];
    let shreddedInPlace = 0;
    for (const stream of candidates) {
      let all = true;
      let erasedHere = 0;
      for await (const event of this.deps.log.readStream(stream)) {
        if (erasedEvents.has(event.id)) erasedHere++;
        else all = false;
      }
      if (all && forgotten) doomed.push(stream);
      else shreddedInPlace += erasedHere;
    }
    for (const id of set.recordIds) doomed.push(streams.memory(tenant, id));
    // One batch: the log finishes its physical removal (a WAL truncation) once, not once per stream.
    await this.deps.log.deleteStreams(doomed);
    const deleted = doomed.length;
    // A tombstone hides the events; only a scavenge removes them from the log's files.
    if (this.deps.compaction && deleted + lateDerived > 0) await this.deps.compaction.port.request();
    await this.complete(erasure, 'delete_streams', at, { deleted, shreddedInPlace, lateDerived });
    return { deleted, shreddedInPlace };
  }

  /**
   * Records whose lineage meets the erased set but that the captured closure lacks: consolidation runs beside
   * the erasure, so a view of records it read before the purge can be written after the closure step. They
   * belong to D*(m), so they go the way of the set: purged, evicted, shredded, their memory streams deleted
   * (a subject's pseudonym is otherwise kept by a view of their erased records). Records of the captured
   * closure (a held one stays), records a hold covers now and, for expiry, records not expired are left (as
   * `closure` leaves them). Returns how many were erased.
   */
  private async eraseLateDerived(tenant: string, scope: ErasureScope, workset: Workset, set: EraseSet): Promise<number> {
    if (this.deps.runner.running) await this.deps.runner.waitFor(await this.deps.log.headPosition(), 60_000);
    const erased = new Set([...set.recordIds, ...set.eventIds]);
    const captured = new Set(workset.records.map((r) => r.id));
    const linked = await this.deps.index.lineageOf(tenant, { ids: [...erased] });
    const meets = linked.filter((n) => !captured.has(n.id) && [...n.parentIds, ...n.sourceEventIds].some((id) => erased.has(id)));
    if (meets.length === 0) return 0;
    const nodes = await this.reachable(
      tenant,
      meets.map((n) => n.id),
    );
    const holds = await this.deps.holds.list(tenant, { fresh: true });
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const kept = (entry: LineageEntry) =>
      captured.has(entry.id) || isHeld(heldView(entry), holds) || (scope.type === 'expired' && !isExpired(entry, scope.asOf));
    const late = deletionClosure(
      meets.map((n) => n.id),
      nodes,
    ).recordIds.filter((id) => !kept(byId.get(id)!));
    if (late.length === 0) return 0;
    await this.deps.index.purge(tenant, late);
    this.deps.projection.forget(tenant, late);
    await this.deps.vault.shred(tenant, late);
    await this.deps.log.deleteStreams(late.map((id) => streams.memory(tenant, id)));
    return late.length;
  }

  /**
   * Step 10: keyed fingerprints of each erased record's content for its subject, which ingest and consolidation
   * refuse; and of the content alone, which they refuse for every subject when the tenant's policy says so.
   * Both are written whatever the policy says today, so a later switch covers this erasure too.
   */
  async writeTombstones(tenant: string, requestId: string, set: EraseSet, at: StepAttempt): Promise<{ tombstones: number }> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const workset = await requireWorkset(erasure);
    const erased = new Set(set.recordIds);
    const records = workset.records.filter((r) => erased.has(r.id));
    const fingerprints = [...new Set(records.map((r) => this.deps.fingerprints.tombstone(tenant, r.subject, r.text)))];
    const tenantWide = [...new Set(records.map((r) => this.deps.fingerprints.tenantTombstone(tenant, r.text)))];
    await this.deps.tombstones.write(tenant, requestId, [...fingerprints, ...tenantWide]);
    await this.complete(erasure, 'tombstones', at, { tombstones: fingerprints.length });
    return { tombstones: fingerprints.length };
  }

  /** Step 11: every probe for every erased record. Records the step only when all pass. */
  async verify(tenant: string, requestId: string, set: EraseSet, round: number, at: StepAttempt): Promise<Verification> {
    const erasure = await this.deps.store.loadRequest(tenant, requestId);
    const workset = await requireWorkset(erasure);
    const erased = new Set(set.recordIds);
    const verification = await this.verifier.verify(
      tenant,
      workset.records.filter((r) => erased.has(r.id)),
      [...set.recordIds, ...set.eventIds],
      round,
    );
    verification.logCompaction = await this.logCompaction(erasure);
    if (verification.passed) {
      await this.complete(erasure, 'verify', at, {
        rounds: verification.rounds,
        files: verification.byteScan.files,
      });
    }
    return verification;
  }

  // ---- helpers ----------------------------------------------------------------------------------------

  /**
   * The lineage entries D*(seeds) can reach, in insertion order (as `lineage` lists them, which the closure's
   * discovery order follows): the seeds, the records a reached record is a parent of, and the records
   * extracted from the events of a reached extracted record, looked up a generation at a time (`lineageOf`)
   * rather than read from the whole partition. `deletionClosure` over them finds what it finds over every entry.
   */
  private async reachable(tenant: string, seeds: readonly string[]): Promise<LineageEntry[]> {
    const reached = new Set<string>();
    for (let frontier = [...new Set(seeds)]; frontier.length > 0;) {
      const next: string[] = [];
      for (const entry of await this.deps.index.lineageOf(tenant, { ids: frontier })) {
        if (reached.has(entry.id)) continue;
        reached.add(entry.id);
        next.push(entry.id, ...(entry.rule === EXTRACTION_RULE ? entry.sourceEventIds : []));
      }
      frontier = next;
    }
    return this.deps.index.lineageOf(tenant, { ids: [...reached] });
  }

  /**
   * Whether the deleted streams are gone from the log's files: at once for a
   * log that deletes in place; for EventStoreDB, the first scavenge started
   * after the deletions, waited for a while. Recorded either way, never a failure.
   */
  private async logCompaction(erasure: Erasure): Promise<LogCompactionReport> {
    const compaction = this.deps.compaction;
    const engine = this.deps.logEngine;
    if (!compaction) return IN_PLACE_COMPACTION(engine);
    const deletedAt = erasure.steps.get('delete_streams')?.startedAt;
    if (!deletedAt) return { engine, method: 'scavenge', requested: false, completed: false, result: 'no streams deleted' };
    const deadline = Date.now() + compaction.waitMs;
    for (;;) {
      const report = await compaction.port.report(new Date(deletedAt));
      if (report.completed || Date.now() >= deadline) return report;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
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

  private complete(erasure: Erasure, step: ErasureStep, at: StepAttempt, counts: Record<string, number>): Promise<void> {
    return recordStep(this.deps, erasure, step, at, counts);
  }

  private now(): string {
    return this.deps.clock.now().toISOString();
  }
}

/** The record's longest distinct words (length is a fair stand-in for rarity), for the BM25 probe. */
function distinctiveTerms(record: MemoryRecord): string[] {
  return [...new Set(tokenize(record.content.text))].sort((a, b) => b.length - a.length || a.localeCompare(b)).slice(0, 8);
}
