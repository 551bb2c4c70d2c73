import { type ErasureLedger, type LedgerEntry, type SignedCertificate, type SignedOffboardingCertificate } from '@elma/domain';
import { offboardingLedgerEntryOf } from '../offboarding/offboarding-steps';
import { ledgerEntryOf } from './erasure-certification';

/** A certificate file as read, checked by the caller's verifier (the signing keys are an adapter's business). */
export type CheckedCertificate =
  | { file: string; ok: true; erasure: SignedCertificate }
  | { file: string; ok: true; offboarding: SignedOffboardingCertificate }
  | { file: string; ok: false; reason: string };

/** What checking the ledger against the certificates found and did. Counts, file names and reasons; no ids. */
export interface LedgerRecoveryReport {
  certificates: number;
  /** Certificates whose entry the ledger holds as they state it. */
  matching: number;
  /** Entries added to the ledger from certificates it lacked (each is applied again next). */
  added: number;
  /** Of those, from certificates before version 3: records only (their events, streams and tombstones are unknown). */
  partial: number;
  /** Certificates whose entry the ledger holds differently: the ledger is kept, the files named for a human to look at. */
  differing: string[];
  /** Files that are no certificate of this ELMA, or whose signature does not verify: nothing taken from them. */
  refused: { file: string; reason: string }[];
}

/**
 * Rebuilds or checks the erasure ledger from the signed erasure and off-boarding certificates that compliance
 * officers keep: each certificate states its ledger entry (version 3; older ones their records). An entry the
 * ledger lacks is added, in the order the certificates were issued; one it holds is compared. What the
 * certificates cannot give back (an erasure whose certificate nobody kept) stays lost: the README says so.
 */
export class LedgerRecovery {
  constructor(private readonly deps: { ledger: ErasureLedger }) {}

  async recover(certificates: CheckedCertificate[]): Promise<LedgerRecoveryReport> {
    const report: LedgerRecoveryReport = {
      certificates: certificates.length,
      matching: 0,
      added: 0,
      partial: 0,
      differing: [],
      refused: [],
    };
    const held = new Map((await this.deps.ledger.entries(0)).map(({ entry }) => [`${entry.tenant}/${entry.requestId}`, entry]));
    const stated: { file: string; entry: LedgerEntry; partial: boolean }[] = [];
    for (const checked of certificates) {
      if (!checked.ok) report.refused.push({ file: checked.file, reason: checked.reason });
      else if ('erasure' in checked)
        stated.push({ file: checked.file, entry: erasureEntry(checked.erasure), partial: !checked.erasure.certificate.reapply });
      else stated.push({ file: checked.file, entry: offboardingLedgerEntryOf(checked.offboarding), partial: false });
    }
    stated.sort((a, b) => a.entry.completedAt.localeCompare(b.entry.completedAt));
    for (const { file, entry, partial } of stated) {
      const existing = held.get(`${entry.tenant}/${entry.requestId}`);
      if (existing) {
        if (sameEntry(existing, entry, partial)) report.matching++;
        else report.differing.push(file);
        continue;
      }
      await this.deps.ledger.record(entry);
      held.set(`${entry.tenant}/${entry.requestId}`, entry);
      report.added++;
      if (partial) report.partial++;
    }
    return report;
  }
}

function erasureEntry(signed: SignedCertificate): LedgerEntry {
  return ledgerEntryOf(signed, signed.certificate.reapply ?? { eventIds: [], deletedStreams: [], forgottenPseudonyms: [], tombstones: [] });
}

/** The same entry, field for field; a partial one (an old certificate) only by what it states: records and signature. */
function sameEntry(held: LedgerEntry, stated: LedgerEntry, partial: boolean): boolean {
  if (!partial) return JSON.stringify(sorted(held)) === JSON.stringify(sorted(stated));
  return (
    'recordIds' in held &&
    'recordIds' in stated &&
    JSON.stringify([...held.recordIds].sort()) === JSON.stringify([...stated.recordIds].sort()) &&
    held.certificate.signature === stated.certificate.signature
  );
}

/** The entry with its keys and its lists in order: two entries of one erasure may list the same ids in other orders. */
const sorted = (entry: LedgerEntry) =>
  Object.fromEntries(
    Object.entries(entry)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, value]) => [key, Array.isArray(value) ? [...(value as string[])].sort() : value]),
  );
