import {
  PolicyDocument,
  WrongExpectedVersion,
  parseOrThrow,
  policyDecider,
  PolicyVersionConflict,
  streams,
  type EventLog,
  type PolicyState,
  type TenantPolicy,
} from '@elma/domain';
import { deterministicUuid } from '@elma/shared';
import { handleCommand, type Folded } from '../command/handle-command';

export { PolicyVersionConflict } from '@elma/domain';

export const policyStream = streams.policy;

/**
 * Tenant policies as data: each version is a `PolicyChanged` event in
 * `policy-{tenant}`; a tenant without one gets the built-in default. Versions
 * are appended with the exact expected revision, so two admins cannot both
 * believe they replaced version n.
 */
export class PolicyStore {
  private readonly cache = new Map<string, Folded<PolicyState>>();

  constructor(private readonly deps: { log: EventLog }) {}

  async get(tenant: string): Promise<TenantPolicy> {
    return (await this.current(tenant)).state.policy;
  }

  /**
   * Stores a new version. `expectedVersion`, when given, must be the current
   * version (optimistic concurrency); the new version is current + 1. A
   * concurrent change is a conflict, never retried: the caller decided on the version it saw.
   */
  async put(tenant: string, body: unknown, actor: string, expectedVersion?: number): Promise<TenantPolicy> {
    const document = parseOrThrow(PolicyDocument, body);
    const current = await this.current(tenant, true);
    try {
      const handled = await handleCommand(
        this.deps.log,
        policyStream(tenant),
        policyDecider,
        { type: 'ChangePolicy', document, expectedVersion },
        {
          from: current,
          maxAttempts: 1,
          toEventData: (event) => ({
            id: deterministicUuid('policy', tenant, String(event.data.policy.version)),
            type: event.type,
            data: event.data,
            metadata: { tenant, actor },
          }),
        },
      );
      this.cache.set(tenant, { state: handled.state, revision: handled.revision });
      return handled.state.policy;
    } catch (error) {
      if (error instanceof PolicyVersionConflict) throw error;
      this.cache.delete(tenant);
      if (error instanceof WrongExpectedVersion) throw new PolicyVersionConflict(expectedVersion ?? current.state.policy.version, -1);
      throw error;
    }
  }

  /** The newest version is the whole policy: only the last event is read. */
  private async current(tenant: string, fresh = false): Promise<Folded<PolicyState>> {
    const cached = this.cache.get(tenant);
    if (cached && !fresh) return cached;
    let found: Folded<PolicyState> = { state: policyDecider.initialState(), revision: -1n };
    for await (const recorded of this.deps.log.readStream(policyStream(tenant), { direction: 'backwards', maxCount: 1 })) {
      const event = policyDecider.parse(recorded);
      found = { state: event ? policyDecider.evolve(found.state, event) : found.state, revision: recorded.revision };
    }
    this.cache.set(tenant, found);
    return found;
  }
}
