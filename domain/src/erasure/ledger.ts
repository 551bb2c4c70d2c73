import { z } from 'zod';
import { DomainError } from '../shared/errors';
import { FORMAT_VERSIONS } from '../shared/formats';
import { DocumentSignature } from '../offboarding/certificate';

/**
 * One completed erasure as the erasure ledger keeps it: enough to do it again
 * on data restored from a backup taken before it, and nothing personal (ids,
 * random pseudonyms, keyed fingerprints, times). The ledger lives outside
 * the backups' reach: a restore never rolls it back.
 */
export const ErasureLedgerEntry = z.strictObject({
  formatVersion: z.literal(FORMAT_VERSIONS.erasureLedger),
  tenant: z.string().min(1),
  requestId: z.string().min(1),
  /** When the certificate was issued. */
  completedAt: z.iso.datetime({ offset: true }),
  /** Erased records: their data keys are shredded, their index rows purged and their memory streams deleted. */
  recordIds: z.array(z.string()),
  /** Erased events: their data keys are shredded. */
  eventIds: z.array(z.string()),
  /** Event streams the erasure deleted whole (names carry pseudonyms, never subject ids). */
  deletedStreams: z.array(z.string()),
  /** Pseudonyms of the subjects the erasure forgot. */
  forgottenPseudonyms: z.array(z.string()),
  /** Keyed fingerprints of the erased content that ingest refuses from now on. */
  tombstones: z.array(z.string()),
  /** Which certificate proves it: the signing key id and the signature. */
  certificate: z.strictObject({ keyId: z.string(), signature: z.string() }),
});
export type ErasureLedgerEntry = z.infer<typeof ErasureLedgerEntry>;

/**
 * One completed tenant off-boarding: applied again, it destroys the tenant's
 * key, drops its index, deletes its streams and closes its name for good
 * (`tenants-_system-closed`), so a backup taken before the off-boarding cannot
 * bring the tenant back. Ids and the certificate's signature only.
 * Written with the off-boarding certificate; erasure entries (which carry no
 * `kind`) are stored exactly as before, so a ledger of erasures only is the
 * same file for readers of either shape.
 */
export const TenantOffboardingLedgerEntry = z.strictObject({
  formatVersion: z.literal(FORMAT_VERSIONS.erasureLedger),
  kind: z.literal('tenant-offboarding'),
  tenant: z.string().min(1),
  /** The off-boarding request (`off_…`). */
  requestId: z.string().min(1),
  /** When the off-boarding certificate was issued. */
  completedAt: z.iso.datetime({ offset: true }),
  /** Which certificate proves it: the signing key id and the signature. */
  certificate: z.strictObject({ keyId: z.string(), signature: z.string() }),
});
export type TenantOffboardingLedgerEntry = z.infer<typeof TenantOffboardingLedgerEntry>;

/** Any entry of the ledger: a completed erasure (no `kind`) or a completed tenant off-boarding. */
export const LedgerEntry = z.union([ErasureLedgerEntry, TenantOffboardingLedgerEntry]);
export type LedgerEntry = z.infer<typeof LedgerEntry>;

export const isTenantOffboardingEntry = (entry: LedgerEntry): entry is TenantOffboardingLedgerEntry =>
  'kind' in entry && entry.kind === 'tenant-offboarding';

/** An entry with its place in the ledger (1, 2, ... in the order they were recorded). */
export interface LedgeredErasure {
  seq: number;
  entry: LedgerEntry;
}

/**
 * Where a ledger stands: its identity, how many entries it holds, and the hash chain over them (the SHA-256 of
 * the previous chain value and the entry, from a start made of the ledger's id). Two ledgers with the same mark
 * hold the same entries; a ledger whose chain at `seq` is another value was edited, and one that stops before
 * `seq` lost entries. Backups, the data's witness and certificates keep marks, never entries.
 */
export const LedgerMark = z.strictObject({
  ledgerId: z.string().min(1),
  seq: z.number().int().min(0),
  chain: z.string().regex(/^[0-9a-f]{64}$/),
});
export type LedgerMark = z.infer<typeof LedgerMark>;

/** A mark signed with the certificate signing key (Ed25519 over its canonical JSON, as certificates are). */
export const LedgerHead = z.strictObject({
  type: z.literal('elma.erasure-ledger-head'),
  ...LedgerMark.shape,
  keyId: z.string(),
});
export type LedgerHead = z.infer<typeof LedgerHead>;

export const SignedLedgerHead = z.strictObject({
  head: LedgerHead,
  signature: DocumentSignature,
});
export type SignedLedgerHead = z.infer<typeof SignedLedgerHead>;

/** Signs and checks ledger heads: the certificate signer and the key set it publishes. */
export interface LedgerHeadSigner {
  sign(head: LedgerMark): SignedLedgerHead;
  /** Undefined when the signature holds under a key this ELMA has published; else why not (key ids only). */
  refusal(signed: SignedLedgerHead): string | undefined;
}

export interface AttestOptions {
  /**
   * The data has witnessed this ledger (see `LedgerWitness`), so it was signed: a ledger without a signed head
   * then lost it (removed by hand) and is refused, instead of being signed again as one from before signed heads.
   */
  mustBeSigned?: boolean;
  /**
   * `--rebind`, every copy lost or the key that signed the head gone: the ledger is taken as it is (its entries'
   * checksums and numbering still checked) and its head signed again with the current key.
   */
  resign?: boolean;
}

/**
 * Why a ledger does not continue a mark that something else (the data's witness, a backup's manifest, the other
 * copy) has seen, or undefined when it does: same identity, at least as many entries, and the same chain up to
 * the mark. Pure; the ledger gives its chain value at `seq`.
 */
export function ledgerGap(
  ledger: { id: string; seq: number; chainAt: (seq: number) => string | undefined },
  seen: LedgerMark,
): string | undefined {
  if (ledger.id !== seen.ledgerId)
    return `it is another ledger (${ledger.id}) than the one this data was written beside (${seen.ledgerId})`;
  if (ledger.seq < seen.seq) return `it holds ${ledger.seq} of the ${seen.seq} entries recorded (truncated, emptied or an older copy)`;
  if (ledger.chainAt(seen.seq) !== seen.chain) return `its first ${seen.seq} entries are not the ones recorded (edited or replaced)`;
  return undefined;
}

/**
 * The erasure ledger: completed erasures, append-only, kept apart from the
 * data a backup holds. Written when an erasure's certificate is issued; read
 * after a restore to erase again what the restored data brought back.
 */
export interface ErasureLedger {
  /** Identifies this ledger (random, made with it): a backup records it with the ledger's head. */
  readonly id: string;

  /** Where the ledger stands now (its head's mark). */
  mark(): Promise<LedgerMark>;

  /** The chain value after entry `seq` (0: the start), undefined past the head. */
  chainAt(seq: number): string | undefined;

  /** The head as last signed (undefined for a ledger never signed: new, or written before heads were signed). */
  signedHead(): SignedLedgerHead | undefined;

  /**
   * Checks the signed head against the entries and the signer's published keys (ErasureLedgerUnreadable when it
   * does not hold: entries removed or edited by someone without the signing key), then signs each new head. A
   * ledger never signed is signed here. `record` needs it first.
   */
  attest(signer: LedgerHeadSigner, options?: AttestOptions): Promise<void>;

  /** Records a completed erasure or tenant off-boarding, durably. Idempotent per (tenant, requestId): the first entry stays. */
  record(entry: LedgerEntry): Promise<void>;

  /** The last seq recorded (0 when empty). */
  head(): Promise<number>;

  /** Entries with seq > after, in seq order. */
  entries(after: number): Promise<LedgeredErasure[]>;

  /**
   * Entries after this seq must be applied again (data older than them was
   * restored). The mark only moves back: a second restore before the
   * re-application keeps the earlier of the two.
   */
  requireReapply(after: number): Promise<void>;

  /** The seq after which entries await re-application, or undefined when none do. */
  pendingReapply(): Promise<number | undefined>;

  /** The entries after `after` are applied again: the mark is cleared, unless a restore moved it below `after` meanwhile. */
  reapplied(after: number): Promise<void>;

  close(): Promise<void>;
}

/**
 * The ledger does not continue what the data, a backup or its other copy saw: entries were lost (a deleted,
 * emptied, truncated or older ledger, or another file named by ELMA_ERASURE_LEDGER). Restoring or starting on it
 * could bring erased records back, so ELMA refuses and says how to recover. The reason names counts and ledger ids,
 * never an entry.
 */
export class ErasureLedgerIncomplete extends DomainError {
  constructor(path: string, against: string, reason: string) {
    super(
      'ERASURE_LEDGER.INCOMPLETE',
      `the erasure ledger ${path} does not continue the one ${against} saw: ${reason}. ELMA refuses it, since erasures ` +
        'recorded only in the missing entries would come back. Recover by putting the ledger back (its own copy, or the ' +
        'replica at ELMA_ERASURE_LEDGER_REPLICA), or, if every copy is lost, by rebuilding it from the erasure and ' +
        "off-boarding certificates: 'elma erasure reapply --certificates DIR --rebind' (README: Backup and restore)",
      { path, against, reason },
    );
  }
}

/** The ledger's file cannot be read as a ledger (corrupt, altered, of an unknown version). ELMA refuses to start on it. */
export class ErasureLedgerUnreadable extends DomainError {
  constructor(path: string, reason: string) {
    super(
      'ERASURE_LEDGER.UNREADABLE',
      `the erasure ledger ${path} cannot be read (${reason}). ELMA does not start without it: a restored backup could ` +
        'bring back erased records. Restore the ledger file from its own copy, or see the README (Backup and restore).',
      { path, reason },
    );
  }
}
