import {
  PlaceLegalHold,
  holdExclusions,
  legalHoldDecider,
  parseOrThrow,
  streams,
  type Clock,
  type EventLog,
  type IdSource,
  type KeyVault,
  type LegalHold,
  type ReadExclusions,
  type StoredLegalHold,
} from '@elma/domain';
import { foldStream, handleCommand } from '../command/handle-command';

export { LegalHoldNotFound, type StoredLegalHold } from '@elma/domain';

/** Holds name subjects by pseudonym; `legalhold-{tenant}`, which named them in clear, is migrated here when a data folder is opened. */
export const legalHoldStream = streams.legalHolds;

/** The stored form of a hold, its subjects replaced by their pseudonyms (`pseudonyms` maps every one of them). */
export function storedHold(hold: StoredLegalHold, pseudonyms: Map<string, string>): StoredLegalHold {
  const { subjects, ...scope } = hold.scope;
  if (!subjects) return hold;
  return {
    ...hold,
    scope: { ...scope, subjectPseudonyms: [...new Set([...(scope.subjectPseudonyms ?? []), ...subjects.map((s) => pseudonyms.get(s)!)])] },
  };
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
    const hold: LegalHold = {
      ...request,
      id: `hold_${this.deps.ids.next()}`,
      placedBy: actor,
      placedAt: this.deps.clock.now().toISOString(),
    };
    // A held subject keeps its pseudonym while the hold is active (a subject erasure does not forget it then).
    const pseudonyms = await this.deps.vault.subjectPseudonyms(tenant, hold.scope.subjects ?? [], { create: true });
    await handleCommand(
      this.deps.log,
      legalHoldStream(tenant),
      legalHoldDecider,
      { type: 'PlaceHold', hold: storedHold(hold, pseudonyms) },
      {
        toEventData: (event) => ({ id: this.deps.ids.next(), type: event.type, data: event.data, metadata: { tenant } }),
      },
    );
    (await this.holds(tenant)).set(hold.id, hold);
    return hold;
  }

  /** Decided on the stream as it is (not this process's cache): a hold released elsewhere is not found. */
  async release(tenant: string, actor: string, id: string): Promise<void> {
    const releasedAt = this.deps.clock.now().toISOString();
    await handleCommand(
      this.deps.log,
      legalHoldStream(tenant),
      legalHoldDecider,
      { type: 'ReleaseHold', id, releasedBy: actor, releasedAt },
      {
        toEventData: (event) => ({ id: this.deps.ids.next(), type: event.type, data: event.data, metadata: { tenant } }),
      },
    );
    (await this.holds(tenant)).delete(id);
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
    const stored = (await foldStream(this.deps.log, legalHoldStream(tenant), legalHoldDecider)).state.active;
    const subjects = await this.deps.vault.subjectsOfPseudonyms(
      tenant,
      [...stored.values()].flatMap((h) => h.scope.subjectPseudonyms ?? []),
    );
    holds = new Map([...stored].map(([id, hold]) => [id, heldSubjects(hold, subjects)]));
    this.active.set(tenant, holds);
    return holds;
  }
}

/** The hold with its subjects named again; a pseudonym with no subject left (forgotten) names nobody. */
function heldSubjects(hold: StoredLegalHold, subjects: Map<string, string>): LegalHold {
  const { subjectPseudonyms, ...scope } = hold.scope;
  if (!subjectPseudonyms) return { ...hold, scope };
  const named = [...(scope.subjects ?? []), ...subjectPseudonyms.flatMap((p) => subjects.get(p) ?? [])];
  return { ...hold, scope: { ...scope, ...(named.length > 0 ? { subjects: named } : {}) } };
}
