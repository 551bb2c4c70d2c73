import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import {
  AUDIT_ENTRY_RECORDED,
  AuditEntry,
  FORMAT_VERSIONS,
  OffboardBlockedByLegalHold,
  OffboardExportNotConfigured,
  OffboardingCertificate,
  PLATFORM_TENANT,
  streams,
  type DocumentSigner,
  type EventLog,
  type KeyVault,
  type MemoryIndex,
  type MemoryRecord,
  type Needle,
  type OffboardExport,
  type OffboardState,
  type OffboardStep,
  type RawStoreScan,
  type SignedOffboardingCertificate,
  type Clock,
  type LogCompaction,
  type ErasureLedger,
  type TenantOffboardingLedgerEntry,
} from '@elma/domain';
import type { Sealed } from '@elma/shared';
import type { AuditLog } from '../audit';
import type { LegalHolds } from '../governance/legal-holds';
import type { PolicyStore } from '../governance/policy-store';
import type { EventSealer } from '../sealing/sealed-events';
import type { ProjectionRunner } from '../views/runner';
import type { OffboardingStore } from './offboarding-store';
import type { TenantClosures } from './tenant-closures';
import { tenantStreams } from './tenant-streams';

/** Writes an export archive into the export folder, atomically, owner-only (an adapter: runtime's file sink). */
export interface ExportSink {
  write(name: string, bytes: Uint8Array): Promise<void>;
}

export interface OffboardingStepDeps {
  store: OffboardingStore;
  closures: TenantClosures;
  log: EventLog;
  index: MemoryIndex;
  vault: KeyVault;
  sealer: EventSealer;
  runner: Pick<ProjectionRunner, 'running' | 'waitFor'>;
  holds: Pick<LegalHolds, 'list'>;
  policies: Pick<PolicyStore, 'get'>;
  audit: AuditLog;
  signer: DocumentSigner;
  clock: Clock;
  rawScan: RawStoreScan;
  scanRoots: string[];
  exportSink?: ExportSink;
  /** A log that deletes by tombstone (EventStoreDB): a scavenge is asked for once the streams are deleted. */
  compaction?: LogCompaction;
  /** Where completed off-boardings are kept beyond the reach of backups (the erasure ledger); absent, nothing is kept. */
  ledger?: ErasureLedger;
}

/** Which attempt of a step this is (from Temporal), and when it was scheduled. */
export interface OffboardAttempt {
  attempt: number;
  startedAt: string;
}

export interface OffboardVerification {
  passed: boolean;
  indexRecords: number;
  streamsLeft: number;
  keyDestroyed: boolean;
  byteScan: { needles: number; findings: number; files: number; bytes: number };
}

/** The byte scan's needles: texts of the tenant's records, at most this many, longest first. */
const MAX_NEEDLES = 2_000;
/** Shorter texts would match by chance in unrelated bytes. */
const MIN_NEEDLE_BYTES = 12;

/**
 * The steps of `offboardWorkflow`, each idempotent: a step already recorded
 * in the off-boarding stream returns what it recorded (a worker killed after
 * the work and before the record does the work again, which is harmless:
 * sealing, destroying and deleting are idempotent, and an export is only
 * written while the key lives). Results are ids and counts only.
 */
export class OffboardingSteps {
  constructor(private readonly deps: OffboardingStepDeps) {}

  /** Refuses every request of the tenant's tokens from now on. */
  async seal(tenant: string, requestId: string, at: OffboardAttempt): Promise<Record<string, number>> {
    const state = await this.approved(tenant, requestId);
    return this.once(state, tenant, requestId, 'seal', at, async () => {
      await this.deps.closures.seal(tenant, requestId, this.now());
      return { counts: {} };
    });
  }

  /** A hold placed since the approval stops the off-boarding before anything is destroyed, and lifts the seal. */
  async legalHoldCheck(tenant: string, requestId: string, at: OffboardAttempt): Promise<Record<string, number>> {
    const state = await this.approved(tenant, requestId);
    return this.once(state, tenant, requestId, 'legal_hold', at, async () => {
      const holds = await this.deps.holds.list(tenant, { fresh: true });
      if (holds.length > 0) {
        await this.fail(tenant, requestId, 'OFFBOARD.BLOCKED_BY_LEGAL_HOLD');
        throw new OffboardBlockedByLegalHold(holds.length);
      }
      return { counts: { holds: 0 } };
    });
  }

  /**
   * Once the views have caught up: captures what verification will look for (the records' texts, sealed under a
   * key of the platform tenant) and, when asked, writes the tenant's archive: records with provenance, policy,
   * audit trail. The archive's sha256 goes into the certificate.
   */
  async export(tenant: string, requestId: string, at: OffboardAttempt): Promise<Record<string, number>> {
    const state = await this.approved(tenant, requestId);
    return this.once(state, tenant, requestId, 'export', at, async () => {
      if (this.deps.runner.running) await this.deps.runner.waitFor(await this.deps.log.headPosition(), 60_000);
      const records: MemoryRecord[] = [];
      for await (const record of this.deps.index.records(tenant)) records.push(record);
      const texts = [...new Set(records.map((r) => r.content.text))]
        .filter((t) => Buffer.byteLength(t, 'utf8') >= MIN_NEEDLE_BYTES)
        .sort((a, b) => b.length - a.length)
        .slice(0, MAX_NEEDLES);
      if (state.workset === undefined) {
        const sealed = await this.deps.sealer.sealValue(PLATFORM_TENANT, worksetKey(requestId), { texts });
        await this.deps.store.append(tenant, requestId, [{ type: 'OffboardingWorksetCaptured', workset: sealed }], 'any');
      }
      let archive: OffboardExport | null = null;
      const audit: AuditEntry[] = [];
      if (state.request!.export) {
        for await (const entry of this.deps.audit.export(tenant)) audit.push(entry);
        archive = await this.writeArchive(tenant, requestId, records, audit);
      }
      return { counts: { records: records.length, needles: texts.length, auditEntries: audit.length }, export: archive };
    });
  }

  /** Crypto-shredding of the whole tenant at once: its salt, every data key, every subject pseudonym. */
  async destroyKey(tenant: string, requestId: string, at: OffboardAttempt): Promise<Record<string, number>> {
    const state = await this.approved(tenant, requestId);
    return this.once(state, tenant, requestId, 'destroy_key', at, async () => {
      await this.deps.vault.destroyTenant(tenant);
      return { counts: {} };
    });
  }

  /** Drops the tenant's whole index partition (files and vector graph; the Elasticsearch indices and alias). */
  async dropIndex(tenant: string, requestId: string, at: OffboardAttempt): Promise<Record<string, number>> {
    const state = await this.approved(tenant, requestId);
    const records = await this.deps.index.count(tenant).catch(() => 0);
    await this.deps.index.dropTenant(tenant);
    return this.once(state, tenant, requestId, 'drop_index', at, async () => ({ counts: { records } }));
  }

  /**
   * Hard-deletes every stream of the tenant (events, memories, idempotency claims, erasures, tombstones, policy,
   * holds, audit), after reading the audit trail's final head for the certificate.
   */
  async deleteStreams(tenant: string, requestId: string, at: OffboardAttempt): Promise<Record<string, number>> {
    const state = await this.approved(tenant, requestId);
    const head = state.steps.get('delete_streams')?.auditHead ?? (await this.auditHead(tenant));
    const { names, events } = await this.tenantStreams(tenant);
    // One batch: the log finishes its physical removal (a WAL truncation) once, not once per stream.
    await this.deps.log.deleteStreams(names);
    if (this.deps.compaction && names.length > 0) await this.deps.compaction.request();
    return this.once(state, tenant, requestId, 'delete_streams', at, async () => ({
      counts: { streams: names.length, events },
      auditHead: head,
    }));
  }

  /** Nothing readable left: index empty, no stream, key destroyed, and none of the texts in any file of the data folder. */
  async verify(tenant: string, requestId: string, round: number, at: OffboardAttempt): Promise<OffboardVerification> {
    const state = await this.approved(tenant, requestId);
    const indexRecords = (await this.deps.index.tenants()).includes(tenant) ? await this.deps.index.count(tenant) : 0;
    const streamsLeft = (await this.tenantStreams(tenant)).names.length;
    const keyDestroyed = await this.deps.vault.isShredded(tenant, 'offboarding-probe');
    const { texts } = (await this.deps.sealer.openValue(PLATFORM_TENANT, worksetKey(requestId), state.workset as Sealed)) as {
      texts: string[];
    };
    const needles: Needle[] = texts.flatMap((text, i) => {
      const utf8 = Buffer.from(text, 'utf8');
      const escaped = Buffer.from(JSON.stringify(text).slice(1, -1), 'utf8');
      return escaped.equals(utf8)
        ? [{ id: String(i), bytes: utf8 }]
        : [
            { id: String(i), bytes: utf8 },
            { id: String(i), bytes: escaped },
          ];
    });
    const otherTenantIndex = (path: string) => {
      const name = basename(path);
      return name.startsWith('tenant-') && !name.startsWith(`tenant-${tenant}.`);
    };
    const paths = await this.deps.rawScan.listFiles(this.deps.scanRoots, { exclude: otherTenantIndex });
    const report = await this.deps.rawScan.scanFiles(paths, needles);
    const verification: OffboardVerification = {
      passed: indexRecords === 0 && streamsLeft === 0 && keyDestroyed && report.findings.length === 0,
      indexRecords,
      streamsLeft,
      keyDestroyed,
      byteScan: { needles: texts.length, findings: report.findings.length, files: report.files, bytes: report.bytes },
    };
    if (verification.passed) {
      await this.once(state, tenant, requestId, 'verify', at, async () => ({
        counts: { rounds: round, files: report.files, needles: texts.length },
      }));
    }
    return verification;
  }

  /**
   * Anchors the off-boarding in the platform's audit trail, signs the certificate, tombstones the tenant's name
   * for good and shreds the verification workset. Idempotent: a certified request returns its certificate.
   */
  async certify(
    tenant: string,
    requestId: string,
    outcome: { verification: OffboardVerification; rounds: number },
  ): Promise<SignedOffboardingCertificate> {
    const state = await this.approved(tenant, requestId);
    if (state.certified !== undefined) {
      // A retry after the certificate was saved: finish what followed it (each is idempotent).
      const signed = state.certified as SignedOffboardingCertificate;
      await this.afterCertified(tenant, requestId, signed);
      return signed;
    }
    const request = state.request!;
    const step = (name: OffboardStep) => state.steps.get(name);
    const anchor = await this.deps.audit.record({
      tenant: PLATFORM_TENANT,
      actor: 'elma-offboarding',
      subject: null,
      operation: 'erase',
      resourceIds: [`tenant:${tenant}`, requestId],
      decision: { effect: 'allow', rule: 'offboard:certify' },
      requestId,
    });
    const { byteScan } = outcome.verification;
    const certificate = OffboardingCertificate.parse({
      type: 'elma.tenant-offboarding',
      version: FORMAT_VERSIONS.offboardingCertificate,
      tenant,
      requestId,
      request: {
        requestedBy: request.requestedBy,
        requestedAt: request.requestedAt,
        reason: request.reason,
        approvedBy: state.approval!.approvedBy,
        approvedAt: state.approval!.approvedAt,
      },
      export: step('export')?.export ?? null,
      destroyed: {
        records: step('drop_index')?.counts.records ?? 0,
        streamsDeleted: step('delete_streams')?.counts.streams ?? 0,
        events: step('delete_streams')?.counts.events ?? 0,
        tenantKeyDestroyed: true,
      },
      tenantAudit: step('delete_streams')?.auditHead ?? null,
      steps: [...state.steps.values()].map((s) => ({
        step: s.step,
        startedAt: s.startedAt,
        finishedAt: s.finishedAt,
        attempts: s.attempts,
        counts: s.counts,
      })),
      verification: {
        passed: true,
        indexRecords: 0,
        streamsLeft: 0,
        keyDestroyed: true,
        byteScan: { needles: byteScan.needles, findings: 0, files: byteScan.files, bytes: byteScan.bytes },
        rounds: outcome.rounds,
      },
      auditAnchor: { tenant: PLATFORM_TENANT, seq: anchor.seq, hash: anchor.hash },
      issuedAt: this.now(),
      keyId: this.deps.signer.keyId,
    });
    const signed: SignedOffboardingCertificate = { certificate, signature: this.deps.signer.signDocument(certificate) };
    await this.deps.store.append(tenant, requestId, [{ type: 'OffboardingCertified', signed, at: this.now() }], 'any');
    await this.afterCertified(tenant, requestId, signed);
    return signed;
  }

  /**
   * What follows the certificate: first the erasure ledger's entry (so that a backup taken before this
   * off-boarding and restored later off-boards the tenant again, see `OffboardingReapply`), then the tenant's
   * name closed for good, then the verification workset shredded.
   */
  private async afterCertified(tenant: string, requestId: string, signed: SignedOffboardingCertificate): Promise<void> {
    await this.deps.ledger?.record(offboardingLedgerEntryOf(signed));
    await this.deps.closures.offboarded(tenant, requestId, this.now());
    await this.deps.vault.shred(PLATFORM_TENANT, [worksetKey(requestId)]);
  }

  /**
   * Ends an off-boarding without a certificate: recorded in its stream, the workset shredded, and the seal lifted
   * when nothing was destroyed yet (after the key is gone the tenant stays closed: its data is unreadable anyway).
   */
  async fail(tenant: string, requestId: string, code: string): Promise<void> {
    const { state } = await this.deps.store.read(tenant, requestId);
    if (!state.request || state.certified !== undefined) return;
    if (!state.failure) {
      await this.deps.store.append(tenant, requestId, [{ type: 'OffboardingFailed', code, at: this.now() }], 'any');
      await this.deps.audit.record({
        tenant: PLATFORM_TENANT,
        actor: 'elma-offboarding',
        subject: null,
        operation: 'administer',
        resourceIds: [`tenant:${tenant}`, requestId],
        decision: { effect: 'deny', rule: `offboard:failed:${code}`.slice(0, 256) },
        requestId,
      });
    }
    await this.deps.vault.shred(PLATFORM_TENANT, [worksetKey(requestId)]);
    if (!state.steps.has('destroy_key')) await this.deps.closures.unseal(tenant, requestId, this.now());
  }

  private async writeArchive(tenant: string, requestId: string, records: MemoryRecord[], audit: AuditEntry[]): Promise<OffboardExport> {
    // The API checked it, but the worker may run with another configuration: stop before anything is destroyed.
    if (!this.deps.exportSink) throw new OffboardExportNotConfigured();
    const archive = {
      type: 'elma.tenant-export',
      formatVersion: FORMAT_VERSIONS.tenantExport,
      tenant,
      requestId,
      exportedAt: this.now(),
      policy: await this.deps.policies.get(tenant),
      records,
      audit,
    };
    const bytes = Buffer.from(`${JSON.stringify(archive, null, 2)}\n`, 'utf8');
    const file = `tenant-${tenant}-${requestId}.json`;
    await this.deps.exportSink.write(file, bytes);
    return {
      file,
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      records: records.length,
      auditEntries: audit.length,
    };
  }

  /** The last entry of the tenant's audit chain and how many it has (null without one). */
  private async auditHead(tenant: string): Promise<{ entries: number; seq: number; hash: string } | null> {
    for await (const event of this.deps.log.readStream(streams.audit(tenant), {
      direction: 'backwards',
      fromRevision: 'end',
      maxCount: 1,
    })) {
      if (event.type !== AUDIT_ENTRY_RECORDED) continue;
      const entry = AuditEntry.parse(event.data);
      return { entries: entry.seq + 1, seq: entry.seq, hash: entry.hash };
    }
    return null;
  }

  /** Every stream of the tenant that still has events, and their events' count. */
  private async tenantStreams(tenant: string): Promise<{ names: string[]; events: number }> {
    return tenantStreams(this.deps.log, tenant);
  }

  private async approved(tenant: string, requestId: string): Promise<OffboardState> {
    const { state } = await this.deps.store.read(tenant, requestId);
    if (!state.request || !state.approval) throw new Error(`off-boarding ${requestId} is not approved`);
    return state;
  }

  /** Runs a step's work unless the stream records it as done; records it; returns its counts. */
  private async once(
    state: OffboardState,
    tenant: string,
    requestId: string,
    step: OffboardStep,
    at: OffboardAttempt,
    work: () => Promise<{
      counts: Record<string, number>;
      export?: OffboardExport | null;
      auditHead?: { entries: number; seq: number; hash: string } | null;
    }>,
  ): Promise<Record<string, number>> {
    const done = state.steps.get(step);
    if (done) return done.counts;
    const result = await work();
    // Before the step's record: a crash between the two repeats the entry rather than lose it.
    await this.deps.audit.record({
      tenant: PLATFORM_TENANT,
      actor: 'elma-offboarding',
      subject: null,
      operation: step === 'export' ? 'export' : step === 'seal' || step === 'legal_hold' ? 'administer' : 'erase',
      resourceIds: [`tenant:${tenant}`, requestId, `step/${step}`],
      decision: { effect: 'allow', rule: `offboard:${step}` },
      requestId,
    });
    await this.deps.store.append(
      tenant,
      requestId,
      [
        {
          type: 'OffboardingStepCompleted',
          step,
          startedAt: at.startedAt,
          finishedAt: this.now(),
          attempts: at.attempt,
          counts: result.counts,
          ...(result.export !== undefined ? { export: result.export } : {}),
          ...(result.auditHead !== undefined ? { auditHead: result.auditHead } : {}),
        },
      ],
      'any',
    );
    return result.counts;
  }

  private now(): string {
    return this.deps.clock.now().toISOString();
  }
}

/** The key (in the platform tenant) that seals an off-boarding's verification workset. */
const worksetKey = (requestId: string) => `offboard-workset-${requestId}`;

/** The ledger entry of a certified off-boarding: what its certificate states (so the certificates can rebuild the ledger). */
export function offboardingLedgerEntryOf(signed: SignedOffboardingCertificate): TenantOffboardingLedgerEntry {
  return {
    formatVersion: FORMAT_VERSIONS.erasureLedger,
    kind: 'tenant-offboarding',
    tenant: signed.certificate.tenant,
    requestId: signed.certificate.requestId,
    completedAt: signed.certificate.issuedAt,
    certificate: { keyId: signed.signature.kid, signature: signed.signature.value },
  };
}
