import { z } from 'zod';
import { eventParser, type Decider } from '../shared/decider';
import { DomainError } from '../shared/errors';
import { parseOrThrow } from '../shared/zod';
import { DEFAULT_POLICY, PolicyDocument, TenantPolicy, storedPolicy } from './policy';

/**
 * A tenant's policy stream `policy-{tenant}`: each version is a
 * `PolicyChanged` carrying the whole policy; a tenant without one has the
 * built-in default. A stored policy is read through `storedPolicy` (capped
 * at today's bounds), so old versions keep parsing.
 */
export const PolicyEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('PolicyChanged'), data: z.object({ policy: z.unknown().transform(storedPolicy) }) }),
]);
export type PolicyEvent = z.output<typeof PolicyEvent>;

/** A new version; `expectedVersion`, when given, must be the current version. */
export type PolicyCommand = { type: 'ChangePolicy'; document: PolicyDocument; expectedVersion?: number };

export interface PolicyState {
  policy: TenantPolicy;
}

export const initialPolicyState = (): PolicyState => ({ policy: DEFAULT_POLICY });

export class PolicyVersionConflict extends DomainError {
  constructor(expected: number, actual: number) {
    super('POLICY.VERSION_CONFLICT', `expected policy version ${expected}, but it is ${actual < 0 ? 'newer' : actual}`, {
      expected,
      actual,
    });
  }
}

/** The next version is the current one + 1; a stale `expectedVersion` is a conflict. */
export function decidePolicy(command: PolicyCommand, state: PolicyState): PolicyEvent[] {
  const current = state.policy;
  if (command.expectedVersion !== undefined && command.expectedVersion !== current.version) {
    throw new PolicyVersionConflict(command.expectedVersion, current.version);
  }
  const next = parseOrThrow(TenantPolicy, { ...command.document, version: current.version + 1 });
  return [{ type: 'PolicyChanged', data: { policy: next } }];
}

export function evolvePolicy(_state: PolicyState, event: PolicyEvent): PolicyState {
  return { policy: event.data.policy };
}

export const policyDecider: Decider<PolicyCommand, PolicyEvent, PolicyState> = {
  initialState: initialPolicyState,
  evolve: evolvePolicy,
  decide: decidePolicy,
  parse: eventParser(PolicyEvent, ['PolicyChanged']),
};
