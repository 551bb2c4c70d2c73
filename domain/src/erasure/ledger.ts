import { z } from 'zod';
import { DomainError } from '../shared/errors';
import { FORMAT_VERSIONS } from '../shared/formats';

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
 * The erasure ledger: completed erasures, append-only, kept apart from the
 * data a backup holds. Written when an erasure's certificate is issued; read
 * after a restore to erase again what the restored data brought back.
 */
export interface ErasureLedger {
  /** Identifies this ledger (random, made with it): a backup records it with the ledger's head. */
  readonly id: string;

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
