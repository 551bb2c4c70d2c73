import {
  DomainError,
  PlaceLegalHold,
  holdExclusions,
  parseOrThrow,
  streams,
  type Clock,
  type EventLog,
  type IdSource,
  type KeyVault,
  type LegalHold,
  type ReadExclusions,
} from '@elma/domain';

/** Holds name subjects by pseudonym; `legalhold-{tenant}`, which named them in clear, is migrated here when a data folder is opened. */
export const legalHoldStream = streams.legalHolds;

export class LegalHoldNotFound extends DomainError {
  constructor(id: string) {
    super('LEGAL_HOLD.NOT_FOUND', `legal hold ${id} not found`, { holdId: id });
  }
}

/**
 * A hold as the log keeps it: subjects by their pseudonyms
 * (`scope.subjectPseudonyms`), never their ids. Holds stored before
 * pseudonyms name `scope.subjects`; opening the data folder rewrites them.
 */
export type StoredLegalHold = Omit<LegalHold, 'scope'> & {
  scope: Omit<LegalHold['scope'], 'subjects'> & { subjects?: string[]; subjectPseudonyms?: string[] };
};

/** The stored form of a hold, its subjects replaced by their pseudonyms (`pseudonyms` maps every one of them). */
export function storedHold(hold: StoredLegalHold, pseudonyms: Map<string, string>): StoredLegalHold {
  const { subjects, ...scope } = hold.scope;
  if (!subjects) return hold;
  return { ...hold, scope: { ...scope, subjectPseudonyms: [...new Set([...(scope.subjectPseudonyms ?? []), ...subjects.map((s) => pseudonyms.get(s)!)])] } };
}

/**
 * Legal holds per tenant, kept in `legalholds-{tenant}` (placed and released
 * events) and folded into memory on first use. Held records are withheld
 * from ordinary recall (an exclusion pushed into the index query) and stay
 * visible to the `legal` role. Held subjects are stored by pseudonym and
 * mapped back through the key vault when the holds are read.
 */
export class LegalHolds {
  private readonly active = new Map<string, Map<string, LegalHold>>();

  constructor(private readonly deps: { log: EventLog; clock: Clock; ids: IdSource; vault: KeyVault }) {}

  async place(tenant: string, actor: string, body: unknown): Promise<LegalHold> {
    const request = parseOrThrow(PlaceLegalHold, body);
    const hold: LegalHold = { ...request, id: `hold_${this.deps.ids.next()}`, placedBy: actor, placedAt: this.deps.clock.now().toISOString() };
    // A held subject keeps its pseudonym while the hold is active (a subject erasure does not forget it then).
    const pseudonyms = await this.deps.vault.subjectPseudonyms(tenant, hold.scope.subjects ?? [], { create: true });
    const data = storedHold(hold, pseudonyms);
    await this.deps.log.append(legalHoldStream(tenant), [{ id: this.deps.ids.next(), type: 'LegalHoldPlaced', data, metadata: { tenant } }], {
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
    const stored = new Map<string, StoredLegalHold>();
    for await (const event of this.deps.log.readStream(legalHoldStream(tenant))) {
      if (event.type === 'LegalHoldPlaced') {
        const hold = event.data as StoredLegalHold;
        stored.set(hold.id, hold);
      } else if (event.type === 'LegalHoldReleased') {
        stored.delete((event.data as { id: string }).id);
      }
    }
    const subjects = await this.deps.vault.subjectsOfPseudonyms(tenant, [...stored.values()].flatMap((h) => h.scope.subjectPseudonyms ?? []));
    holds = new Map([...stored].map(([id, hold]) => [id, heldSubjects(hold, subjects)]));
    this.active.set(tenant, holds);
    return holds;
  }
}

/** The hold with its subjects named again; a pseudonym with no subject left (forgotten) names nobody. */
function heldSubjects(hold: StoredLegalHold, subjects: Map<string, string>): LegalHold {
  const { subjectPseudonyms, ...scope } = hold.scope;
  if (!subjectPseudonyms) return hold as LegalHold;
  const named = [...(scope.subjects ?? []), ...subjectPseudonyms.flatMap((p) => subjects.get(p) ?? [])];
  return { ...hold, scope: { ...scope, ...(named.length > 0 ? { subjects: named } : {}) } };
}
