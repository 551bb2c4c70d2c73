import {
  ErasureLedgerIncomplete,
  type AttestOptions,
  ledgerGap,
  SignedLedgerHead,
  streams,
  type ErasureLedger,
  type EventLog,
  type LedgerEntry,
  type LedgeredErasure,
  type LedgerHeadSigner,
  type LedgerMark,
} from '@elma/domain';

const WITNESSED = 'LedgerWitnessed';

/**
 * The data's own record of the erasure ledger it was written beside: after each entry, the ledger's signed head
 * is appended to a system stream of the event log. The record travels with the data (into backups, snapshots
 * and restores), so a start can tell when the ledger beside it is not the one the data saw, or holds fewer
 * entries: deleted, emptied, truncated, an older copy, or another file named by ELMA_ERASURE_LEDGER.
 */
export class LedgerWitness {
  constructor(private readonly deps: { log: EventLog; signer: LedgerHeadSigner }) {}

  /** The last head the data saw, if any (none: a new folder, or data from before the witness). */
  async latest(): Promise<SignedLedgerHead | undefined> {
    for await (const event of this.deps.log.readStream(streams.ledgerWitness, { direction: 'backwards', maxCount: 1 })) {
      const parsed = SignedLedgerHead.safeParse(event.data);
      if (!parsed.success) throw new Error('the erasure ledger witness holds an event that is not a signed ledger head');
      return parsed.data;
    }
    return undefined;
  }

  /** Refuses a ledger that does not continue what the data saw (ErasureLedgerIncomplete). */
  async check(ledger: ErasureLedger, path: string): Promise<void> {
    const seen = await this.latest();
    if (!seen) return;
    const refusal = this.deps.signer.refusal(seen);
    if (refusal) throw new ErasureLedgerIncomplete(path, 'this data', `the data's record of the ledger does not verify (${refusal})`);
    const gap = ledgerGap({ id: ledger.id, seq: await ledger.head(), chainAt: (seq) => ledger.chainAt(seq) }, seen.head);
    if (gap) throw new ErasureLedgerIncomplete(path, 'this data', gap);
  }

  /** Records the ledger's current signed head, unless the data saw it already. */
  async advance(ledger: ErasureLedger): Promise<void> {
    const head = ledger.signedHead();
    if (!head) return;
    const seen = await this.latest();
    if (seen && sameMark(seen.head, head.head)) return;
    await this.deps.log.append(streams.ledgerWitness, [{ id: crypto.randomUUID(), type: WITNESSED, data: { ...head } }], {
      expectedRevision: 'any',
    });
  }
}

const sameMark = (a: LedgerMark, b: LedgerMark) => a.ledgerId === b.ledgerId && a.seq === b.seq && a.chain === b.chain;

/** The ledger as erasures and off-boardings write it: each entry is witnessed by the data once recorded. */
export class WitnessedErasureLedger implements ErasureLedger {
  constructor(
    private readonly ledger: ErasureLedger,
    private readonly witness: LedgerWitness,
  ) {}

  get id() {
    return this.ledger.id;
  }

  async record(entry: LedgerEntry): Promise<void> {
    await this.ledger.record(entry);
    await this.witness.advance(this.ledger);
  }

  mark = () => this.ledger.mark();
  chainAt = (seq: number) => this.ledger.chainAt(seq);
  signedHead = () => this.ledger.signedHead();
  attest = (signer: LedgerHeadSigner, options?: AttestOptions) => this.ledger.attest(signer, options);
  head = () => this.ledger.head();
  entries = (after: number): Promise<LedgeredErasure[]> => this.ledger.entries(after);
  requireReapply = (after: number) => this.ledger.requireReapply(after);
  pendingReapply = () => this.ledger.pendingReapply();
  reapplied = (after: number) => this.ledger.reapplied(after);
  close = () => this.ledger.close();
}
