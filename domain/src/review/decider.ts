import { z } from 'zod';
import { SourceTrust } from '../memory/record';
import { eventParser, type Decider } from '../shared/decider';
import { DomainError } from '../shared/errors';
import { ReviewFlag, ReviewFlagRaised, ReviewFlagResolution, type ReviewDecision } from './flag';

/**
 * A tenant's review flags, `reviews-{tenant}`: `ReviewFlagRaised` and
 * `ReviewFlagResolved` events, plus `SourceTrustObserved`, the trust tier a
 * source system was last seen with (what `source_tier_changed` compares to,
 * kept in the log so that a restart does not forget it).
 */
export const SourceTrustObserved = z.object({
  system: z.string().min(1).max(100),
  tier: SourceTrust,
  at: z.iso.datetime({ offset: true }),
});
export type SourceTrustObserved = z.infer<typeof SourceTrustObserved>;

export const ReviewFlagResolved = ReviewFlagResolution.extend({ id: z.string() });
export type ReviewFlagResolved = z.infer<typeof ReviewFlagResolved>;

export const ReviewEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ReviewFlagRaised'), data: ReviewFlagRaised }),
  z.object({ type: z.literal('ReviewFlagResolved'), data: ReviewFlagResolved }),
  z.object({ type: z.literal('SourceTrustObserved'), data: SourceTrustObserved }),
]);
export type ReviewEvent = z.infer<typeof ReviewEvent>;

export type ReviewCommand =
  | { type: 'RaiseFlags'; flags: ReviewFlagRaised[] }
  | { type: 'ObserveSourceTrust'; observations: SourceTrustObserved[] }
  | { type: 'ResolveFlag'; id: string; decision: ReviewDecision; by: string; at: string; note?: string };

/** A source system's trust tier since `at` (the transaction time of the write it was first seen in). */
export interface SourceTier {
  tier: SourceTrust;
  at: string;
}

export interface ReviewState {
  /** Every flag by id, in the order raised. */
  flags: ReadonlyMap<string, ReviewFlag>;
  /** The tier each source system was last seen with, and the transaction time of the write that set it. */
  sourceTiers: ReadonlyMap<string, SourceTier>;
}

export const initialReviewState = (): ReviewState => ({ flags: new Map(), sourceTiers: new Map() });

/** An unknown flag id, and another tenant's (its stream is another): the same answer. */
export class ReviewFlagNotFound extends DomainError {
  constructor(id: string) {
    super('REVIEW.FLAG_NOT_FOUND', `review flag ${id} not found`, { flagId: id });
  }
}

export class ReviewFlagAlreadyResolved extends DomainError {
  constructor(id: string, status: string) {
    super('REVIEW.FLAG_ALREADY_RESOLVED', `review flag ${id} is already ${status}`, { flagId: id, status });
  }
}

/** Raising is idempotent by flag id; an observation is recorded only when the tier changes; a flag is resolved once. */
export function decideReview(command: ReviewCommand, state: ReviewState): ReviewEvent[] {
  switch (command.type) {
    case 'RaiseFlags': {
      const fresh = new Map(command.flags.filter((flag) => !state.flags.has(flag.id)).map((flag) => [flag.id, flag]));
      return [...fresh.values()].map((data) => ({ type: 'ReviewFlagRaised', data }));
    }
    case 'ObserveSourceTrust': {
      const tiers = new Map(state.sourceTiers);
      const events: ReviewEvent[] = [];
      for (const observation of command.observations) {
        if (tiers.get(observation.system)?.tier === observation.tier) continue;
        tiers.set(observation.system, { tier: observation.tier, at: observation.at });
        events.push({ type: 'SourceTrustObserved', data: observation });
      }
      return events;
    }
    case 'ResolveFlag': {
      const flag = state.flags.get(command.id);
      if (!flag) throw new ReviewFlagNotFound(command.id);
      if (flag.status !== 'open') throw new ReviewFlagAlreadyResolved(command.id, flag.status);
      const { type: _type, ...resolution } = command;
      return [{ type: 'ReviewFlagResolved', data: resolution }];
    }
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

export function evolveReview(state: ReviewState, event: ReviewEvent): ReviewState {
  switch (event.type) {
    case 'ReviewFlagRaised': {
      const flags = new Map(state.flags);
      flags.set(event.data.id, { ...event.data, status: 'open' });
      return { ...state, flags };
    }
    case 'ReviewFlagResolved': {
      const { id, ...resolution } = event.data;
      const flag = state.flags.get(id);
      if (!flag) return state;
      const flags = new Map(state.flags);
      flags.set(id, { ...flag, status: resolution.decision, resolution });
      return { ...state, flags };
    }
    case 'SourceTrustObserved': {
      const sourceTiers = new Map(state.sourceTiers);
      sourceTiers.set(event.data.system, { tier: event.data.tier, at: event.data.at });
      return { ...state, sourceTiers };
    }
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
}

export const reviewDecider: Decider<ReviewCommand, ReviewEvent, ReviewState> = {
  initialState: initialReviewState,
  evolve: evolveReview,
  decide: decideReview,
  parse: eventParser(ReviewEvent, ['ReviewFlagRaised', 'ReviewFlagResolved', 'SourceTrustObserved']),
};
