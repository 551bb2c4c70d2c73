import { z } from 'zod';
import { eventParser, type Decider } from '../shared/decider';
import { DomainError } from '../shared/errors';

/**
 * A tenant's legal holds, `legalholds-{tenant}`: `LegalHoldPlaced` and
 * `LegalHoldReleased` events. Holds name subjects by pseudonym
 * (`scope.subjectPseudonyms`), never by id; holds stored before pseudonyms
 * name `scope.subjects` until the data folder's migration rewrites them.
 */
const Ids = z.array(z.string());

export const StoredLegalHold = z.object({
  scope: z.object({ subjects: Ids.optional(), projects: Ids.optional(), recordIds: Ids.optional(), subjectPseudonyms: Ids.optional() }),
  reason: z.string(),
  id: z.string(),
  placedBy: z.string(),
  placedAt: z.string(),
});
/** A hold as the log keeps it. */
export type StoredLegalHold = z.infer<typeof StoredLegalHold>;

export const LegalHoldReleased = z.object({ id: z.string(), releasedBy: z.string(), releasedAt: z.string() });
export type LegalHoldReleased = z.infer<typeof LegalHoldReleased>;

export const LegalHoldEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('LegalHoldPlaced'), data: StoredLegalHold }),
  z.object({ type: z.literal('LegalHoldReleased'), data: LegalHoldReleased }),
]);
export type LegalHoldEvent = z.infer<typeof LegalHoldEvent>;

export type LegalHoldCommand =
  { type: 'PlaceHold'; hold: StoredLegalHold } | { type: 'ReleaseHold'; id: string; releasedBy: string; releasedAt: string };

/** The active holds by id, as stored (subjects by pseudonym). */
export interface LegalHoldState {
  active: ReadonlyMap<string, StoredLegalHold>;
}

export const initialLegalHoldState = (): LegalHoldState => ({ active: new Map() });

export class LegalHoldNotFound extends DomainError {
  constructor(id: string) {
    super('LEGAL_HOLD.NOT_FOUND', `legal hold ${id} not found`, { holdId: id });
  }
}

/** Placing always records the hold; releasing needs it active. */
export function decideLegalHold(command: LegalHoldCommand, state: LegalHoldState): LegalHoldEvent[] {
  switch (command.type) {
    case 'PlaceHold':
      return [{ type: 'LegalHoldPlaced', data: command.hold }];
    case 'ReleaseHold': {
      if (!state.active.has(command.id)) throw new LegalHoldNotFound(command.id);
      return [{ type: 'LegalHoldReleased', data: { id: command.id, releasedBy: command.releasedBy, releasedAt: command.releasedAt } }];
    }
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

export function evolveLegalHold(state: LegalHoldState, event: LegalHoldEvent): LegalHoldState {
  const active = new Map(state.active);
  switch (event.type) {
    case 'LegalHoldPlaced':
      active.set(event.data.id, event.data);
      break;
    case 'LegalHoldReleased':
      active.delete(event.data.id);
      break;
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
  return { active };
}

export const legalHoldDecider: Decider<LegalHoldCommand, LegalHoldEvent, LegalHoldState> = {
  initialState: initialLegalHoldState,
  evolve: evolveLegalHold,
  decide: decideLegalHold,
  parse: eventParser(LegalHoldEvent, ['LegalHoldPlaced', 'LegalHoldReleased']),
};
