import { existsSync, renameSync, rmSync } from 'node:fs';
import {
  ErasureLedgerUnreadable,
  type AttestOptions,
  ledgerGap,
  type ErasureLedger,
  type LedgerEntry,
  type LedgeredErasure,
  type LedgerHeadSigner,
  type LedgerMark,
  type SignedLedgerHead,
} from '@elma/domain';
import { SqliteErasureLedger } from './sqlite-erasure-ledger';

/** What opening the ledger and its replica did to bring them back in step (for the log: paths and counts only). */
export interface LedgerHealing {
  /** The copy rebuilt, or extended, from the other. */
  healed: string;
  from: string;
  /** Why: missing, unreadable (kept aside as `keptAs`), or behind by some entries. */
  reason: 'missing' | 'unreadable' | 'behind';
  entries: number;
  keptAs?: string;
}

/**
 * Opens the erasure ledger: the file alone, or the file and its replica (ELMA_ERASURE_LEDGER_REPLICA) brought
 * in step first. A copy that is missing, unreadable (emptied, damaged) or behind the other (an older copy, a
 * crash between the two writes) is rebuilt or extended from the other, which proves it; two copies that
 * disagree (other identities, other entries) are refused. An unreadable copy is kept aside, never deleted.
 */
export function openErasureLedger(
  paths: { erasureLedger: string; erasureLedgerReplica?: string },
  options: { create?: boolean; onHealed?: (healing: LedgerHealing) => void } = {},
): ErasureLedger & { readonly path: string } {
  const { erasureLedger: primaryPath, erasureLedgerReplica: replicaPath } = paths;
  if (!replicaPath) return SqliteErasureLedger.open(primaryPath, { create: options.create });
  let primary = tryOpen(primaryPath);
  let replica = tryOpen(replicaPath);
  try {
    // A copy with no entry under another identity than the other's was made anew in error (its file deleted, then a
    // start): it proves nothing, and is rebuilt from the other like a missing one.
    if (primary instanceof SqliteErasureLedger && replica instanceof SqliteErasureLedger && primary.id !== replica.id) {
      if (primary.entryCount() === 0) primary = setAside(primary);
      else if (replica.entryCount() === 0) replica = setAside(replica);
    }
    if (primary instanceof SqliteErasureLedger && replica instanceof SqliteErasureLedger) {
      const healing = reconcile(primary, replica);
      if (healing) options.onHealed?.(healing);
      return new ReplicatedErasureLedger(primary, replica);
    }
    const good = primary instanceof SqliteErasureLedger ? primary : replica instanceof SqliteErasureLedger ? replica : undefined;
    if (!good) {
      // Neither copy exists: a new ledger, made once and copied (unless the caller may not create one).
      if (primary === 'missing' && replica === 'missing' && options.create !== false) {
        const made = SqliteErasureLedger.open(primaryPath);
        made.copyTo(replicaPath);
        return new ReplicatedErasureLedger(made, SqliteErasureLedger.open(replicaPath, { create: false }));
      }
      const reasons = [primary, replica].map((state) => (state instanceof ErasureLedgerUnreadable ? state.message : `no file`));
      throw new ErasureLedgerUnreadable(primaryPath, `neither the ledger nor its replica can be read: ${reasons.join('; ')}`);
    }
    const [lostPath, lost] = good === primary ? [replicaPath, replica] : [primaryPath, primary];
    const keptAs = lost === 'missing' ? undefined : `${lostPath}.unreadable-${Date.now()}`;
    if (keptAs) renameSync(lostPath, keptAs);
    for (const suffix of ['-journal', '-wal', '-shm']) rmSync(`${lostPath}${suffix}`, { force: true });
    good.copyTo(lostPath);
    options.onHealed?.({
      healed: lostPath,
      from: good.path,
      reason: lost === 'missing' ? 'missing' : 'unreadable',
      entries: good.entryCount(),
      ...(keptAs ? { keptAs } : {}),
    });
    const rebuilt = SqliteErasureLedger.open(lostPath, { create: false });
    return good === primary ? new ReplicatedErasureLedger(primary, rebuilt) : new ReplicatedErasureLedger(rebuilt, good);
  } catch (error) {
    for (const copy of [primary, replica]) if (copy instanceof SqliteErasureLedger) void copy.close();
    throw error;
  }
}

function setAside(copy: SqliteErasureLedger): ErasureLedgerUnreadable {
  void copy.close();
  return new ErasureLedgerUnreadable(copy.path, 'a new, empty ledger beside a copy that holds entries');
}

function tryOpen(path: string): SqliteErasureLedger | 'missing' | ErasureLedgerUnreadable {
  if (!existsSync(path)) return 'missing';
  try {
    return SqliteErasureLedger.open(path, { create: false });
  } catch (error) {
    if (error instanceof ErasureLedgerUnreadable) return error;
    throw error;
  }
}

/** Brings the copy that is behind up to the other; refuses copies that disagree. */
function reconcile(primary: SqliteErasureLedger, replica: SqliteErasureLedger): LedgerHealing | undefined {
  const [ahead, behind] = primary.entryCount() >= replica.entryCount() ? [primary, replica] : [replica, primary];
  const behindMark: LedgerMark = { ledgerId: behind.id, seq: behind.entryCount(), chain: behind.chainAt(behind.entryCount())! };
  const gap = ledgerGap({ id: ahead.id, seq: ahead.entryCount(), chainAt: (seq) => ahead.chainAt(seq) }, behindMark);
  if (gap) {
    throw new ErasureLedgerUnreadable(
      primary.path,
      `it and its replica ${replica.path} disagree: the longer one is not a continuation of the other (${gap})`,
    );
  }
  if (behind.entryCount() === ahead.entryCount()) return undefined;
  const entries = ahead.entryCount() - behind.entryCount();
  behind.appendFrom(ahead);
  return { healed: behind.path, from: ahead.path, reason: 'behind', entries };
}

/** The ledger and its replica, written in step (the ledger first); read from the ledger. */
class ReplicatedErasureLedger implements ErasureLedger {
  constructor(
    private readonly primary: SqliteErasureLedger,
    private readonly replica: SqliteErasureLedger,
  ) {}

  get id(): string {
    return this.primary.id;
  }

  get path(): string {
    return this.primary.path;
  }

  mark(): Promise<LedgerMark> {
    return this.primary.mark();
  }

  chainAt(seq: number): string | undefined {
    return this.primary.chainAt(seq);
  }

  signedHead(): SignedLedgerHead | undefined {
    return this.primary.signedHead();
  }

  async attest(signer: LedgerHeadSigner, options?: AttestOptions): Promise<void> {
    await this.primary.attest(signer, options);
    await this.replica.attest(signer, options);
  }

  async record(entry: LedgerEntry): Promise<void> {
    // An erasure is complete only once both copies hold it: a failed replica write fails the step, which is retried.
    await this.primary.record(entry);
    await this.replica.record(entry);
  }

  head(): Promise<number> {
    return this.primary.head();
  }

  entries(after: number): Promise<LedgeredErasure[]> {
    return this.primary.entries(after);
  }

  async requireReapply(after: number): Promise<void> {
    await this.primary.requireReapply(after);
    await this.replica.requireReapply(after);
  }

  pendingReapply(): Promise<number | undefined> {
    return this.primary.pendingReapply();
  }

  async reapplied(after: number): Promise<void> {
    await this.primary.reapplied(after);
    await this.replica.reapplied(after);
  }

  async close(): Promise<void> {
    await this.primary.close();
    await this.replica.close();
  }
}
