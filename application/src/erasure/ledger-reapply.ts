import {
  isTenantOffboardingEntry,
  streams,
  type ErasureLedger,
  type ErasureLedgerEntry,
  type EventLog,
  type KeyVault,
  type LedgeredErasure,
  type MemoryIndex,
} from '@elma/domain';
import type { AuditLog } from '../audit/audit-log';
import type { OffboardingReapply } from '../offboarding/offboarding-reapply';
import { ErasureStore } from './erasure-store';
import type { Tombstones } from './tombstones';

/** Counts of one re-application, for the log line (never ids). */
export interface ReapplyReport {
  /** Entries read from the ledger. */
  checked: number;
  /** Entries that found something to erase again. */
  erasures: number;
  keysShredded: number;
  recordsPurged: number;
  streamsDeleted: number;
  pseudonymsForgotten: number;
  tombstones: number;
  /** Tenant off-boardings that found something to do again (their key, index, streams or closure were back). */
  offboardings: number;
  tenantKeysDestroyed: number;
  tenantIndexesDropped: number;
}

/** The actor audit entries of a re-application name. */
export const LEDGER_ACTOR = 'system:erasure-ledger';

/**
 * Applies completed erasures again to data that may predate them (a restored
 * backup): shreds their keys, purges their index rows, deletes their
 * streams, re-adds their tombstones and forgets their subjects' pseudonyms.
 * Every step is idempotent, so an entry applied twice (or to data that never
 * lost it) changes nothing. Runs before the projection and the API start.
 */
export class ErasureLedgerReapply {
  constructor(
    private readonly deps: {
      ledger: ErasureLedger;
      log: EventLog;
      vault: KeyVault;
      index: MemoryIndex;
      tombstones: Tombstones;
      audit: AuditLog;
      /** Re-applies the ledger's tenant off-boardings; absent, an off-boarding entry stops the re-application. */
      offboarding?: OffboardingReapply;
      /**
       * Subject-access exports restored with the data: an export of an erased subject, or holding an erased record,
       * is a copy of what the erasure destroyed, so it is deleted again (its key shredded).
       */
      subjectExports?: {
        forgetExports(tenant: string, erased: { pseudonyms?: readonly string[]; recordIds: readonly string[] }): Promise<number>;
      };
    },
  ) {}

  /** The entries a restore left to re-apply, if any; clears the mark when done. */
  async reapplyPending(): Promise<ReapplyReport | undefined> {
    const after = await this.deps.ledger.pendingReapply();
    if (after === undefined) return undefined;
    const report = await this.reapply(await this.deps.ledger.entries(after));
    await this.deps.ledger.reapplied(after);
    return report;
  }

  /** Every entry after `after` (0: all), whether or not a restore asked for it (`elma erasures reapply`). */
  async reapplyAll(after = 0): Promise<ReapplyReport> {
    return this.reapply(await this.deps.ledger.entries(after));
  }

  private async reapply(entries: LedgeredErasure[]): Promise<ReapplyReport> {
    const report: ReapplyReport = {
      checked: entries.length,
      erasures: 0,
      keysShredded: 0,
      recordsPurged: 0,
      streamsDeleted: 0,
      pseudonymsForgotten: 0,
      tombstones: 0,
      offboardings: 0,
      tenantKeysDestroyed: 0,
      tenantIndexesDropped: 0,
    };
    // A tenant off-boarded at any time (in the ledger) has nothing left to erase record by record: its off-boarding
    // (re-applied below if it came after the restored data) destroys all of it, and its streams may no longer be written.
    const offboarded = new Set(
      (await this.deps.ledger.entries(0)).flatMap(({ entry }) => (isTenantOffboardingEntry(entry) ? [entry.tenant] : [])),
    );
    for (const { entry } of entries) {
      if (isTenantOffboardingEntry(entry)) {
        if (!this.deps.offboarding) throw new Error('the erasure ledger holds a tenant off-boarding, and nothing here can re-apply it');
        const done = await this.deps.offboarding.reapply(entry);
        if (done.changed) report.offboardings++;
        if (done.keyDestroyed) report.tenantKeysDestroyed++;
        if (done.indexDropped) report.tenantIndexesDropped++;
        report.streamsDeleted += done.streamsDeleted;
        continue;
      }
      if (offboarded.has(entry.tenant)) continue;
      await this.reapplyErasure(entry, report);
    }
    return report;
  }

  private async reapplyErasure(entry: ErasureLedgerEntry, report: ReapplyReport): Promise<void> {
    const { tenant, requestId } = entry;
    // Keys first: from here the restored ciphertext of the records, events, scope and workset is unreadable.
    const keyIds = [...entry.recordIds, ...entry.eventIds, ErasureStore.keyId(requestId)];
    const live = keyIds.length - (await this.deps.vault.shreddedAmong(tenant, keyIds)).size;
    await this.deps.vault.shred(tenant, keyIds);
    const exports =
      (await this.deps.subjectExports?.forgetExports(tenant, { pseudonyms: entry.forgottenPseudonyms, recordIds: entry.recordIds })) ?? 0;
    const before = await this.deps.index.count(tenant);
    await this.deps.index.purge(tenant, entry.recordIds);
    const purged = before - (await this.deps.index.count(tenant));
    let deleted = 0;
    const doomed = [...entry.recordIds.map((id) => streams.memory(tenant, id)), ...entry.deletedStreams];
    for (const stream of doomed) {
      for await (const _event of this.deps.log.readStream(stream)) {
        deleted++;
        break;
      }
    }
    await this.deps.log.deleteStreams(doomed);
    await this.deps.tombstones.write(tenant, requestId, entry.tombstones);
    let forgotten = 0;
    if (entry.forgottenPseudonyms.length > 0) {
      const subjects = await this.deps.vault.subjectsOfPseudonyms(tenant, entry.forgottenPseudonyms);
      for (const subject of subjects.values()) {
        await this.deps.vault.forgetSubject(tenant, subject);
        forgotten++;
      }
    }
    const changed = live + exports + purged + deleted + forgotten > 0;
    if (changed) {
      await this.deps.audit.record({
        tenant,
        actor: LEDGER_ACTOR,
        subject: null,
        operation: 'erase',
        resourceIds: [`erasure/${requestId}`, 'reapplied'],
        decision: { effect: 'allow', rule: 'erasure:reapply' },
        requestId,
      });
      report.erasures++;
    }
    report.keysShredded += live + exports;
    report.recordsPurged += purged;
    report.streamsDeleted += deleted;
    report.pseudonymsForgotten += forgotten;
    report.tombstones += entry.tombstones.length;
  }
}
