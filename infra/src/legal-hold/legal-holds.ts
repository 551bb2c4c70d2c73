import {
  DomainError,
  PlaceLegalHold,
  holdExclusions,
  parseOrThrow,
  type Clock,
  type EventLog,
  type IdSource,
  type LegalHold,
  type ReadExclusions,
} from '@elma/domain';

export const legalHoldStream = (tenant: string) => `legalhold-${tenant}`;

export class LegalHoldNotFound extends DomainError {
  constructor(id: string) {
    super('LEGAL_HOLD.NOT_FOUND', `legal hold ${id} not found`, { holdId: id });
  }
}

/**
 * Legal holds per tenant, kept in `legalhold-{tenant}` (placed and released
 * events) and folded into memory on first use. Held records are withheld
 * from ordinary recall (an exclusion pushed into the index query) and stay
 * visible to the `legal` role.
 */
export class LegalHolds {
  private readonly active = new Map<string, Map<string, LegalHold>>();

  constructor(private readonly deps: { log: EventLog; clock: Clock; ids: IdSource }) {}

  async place(tenant: string, actor: string, body: unknown): Promise<LegalHold> {
    const request = parseOrThrow(PlaceLegalHold, body);
    const hold: LegalHold = { ...request, id: `hold_${this.deps.ids.next()}`, placedBy: actor, placedAt: this.deps.clock.now().toISOString() };
    await this.deps.log.append(legalHoldStream(tenant), [{ id: this.deps.ids.next(), type: 'LegalHoldPlaced', data: hold, metadata: { tenant } }], {
      expectedRevision: 'any',
    });
    (await this.holds(tenant)).set(hold.id, hold);
    return hold;
  }

  async release(tenant: string, actor: string, id: string): Promise<void> {
    const holds = await this.holds(tenant);
    if (!holds.has(id)) throw new LegalHoldNotFound(id);
    await this.deps.log.append(
      legalHoldStream(tenant),
      [{ id: this.deps.ids.next(), type: 'LegalHoldReleased', data: { id, releasedBy: actor, releasedAt: this.deps.clock.now().toISOString() }, metadata: { tenant } }],
      { expectedRevision: 'any' },
    );
    holds.delete(id);
  }

  /** The active holds; `fresh` re-reads the log, for a decision that must see holds placed by other processes. */
  async list(tenant: string, options: { fresh?: boolean } = {}): Promise<LegalHold[]> {
    if (options.fresh) this.active.delete(tenant);
    return [...(await this.holds(tenant)).values()];
  }

  async exclusions(tenant: string): Promise<ReadExclusions> {
    return holdExclusions((await this.holds(tenant)).values());
  }

  private async holds(tenant: string): Promise<Map<string, LegalHold>> {
    let holds = this.active.get(tenant);
    if (holds) return holds;
    holds = new Map();
    for await (const event of this.deps.log.readStream(legalHoldStream(tenant))) {
      if (event.type === 'LegalHoldPlaced') {
        const hold = event.data as LegalHold;
        holds.set(hold.id, hold);
      } else if (event.type === 'LegalHoldReleased') {
        holds.delete((event.data as { id: string }).id);
      }
    }
    this.active.set(tenant, holds);
    return holds;
  }
}
