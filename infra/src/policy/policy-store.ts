import {
  DEFAULT_POLICY,
  DomainError,
  PolicyDocument,
  TenantPolicy,
  WrongExpectedVersion,
  parseOrThrow,
  storedPolicy,
  streams,
  type EventLog,
} from '@elma/domain';
import { deterministicUuid } from '../ingest/ids';

export const policyStream = streams.policy;

/**
 * Tenant policies as data: each version is a `PolicyChanged` event in
 * `policy-{tenant}`; a tenant without one gets the built-in default. Versions
 * are appended with the exact expected revision, so two admins cannot both
 * believe they replaced version n.
 */
export class PolicyStore {
  private readonly cache = new Map<string, { policy: TenantPolicy; revision: bigint }>();

  constructor(private readonly deps: { log: EventLog }) {}

  async get(tenant: string): Promise<TenantPolicy> {
    return (await this.current(tenant)).policy;
  }

  /**
   * Stores a new version. `expectedVersion`, when given, must be the current
   * version (optimistic concurrency); the new version is current + 1.
   */
  async put(tenant: string, body: unknown, actor: string, expectedVersion?: number): Promise<TenantPolicy> {
    const document = parseOrThrow(PolicyDocument, body);
    const { policy: current, revision } = await this.current(tenant, true);
    if (expectedVersion !== undefined && expectedVersion !== current.version) {
      throw new PolicyVersionConflict(expectedVersion, current.version);
    }
    const next = parseOrThrow(TenantPolicy, { ...document, version: current.version + 1 });
    try {
      const result = await this.deps.log.append(
        policyStream(tenant),
        [
          {
            id: deterministicUuid('policy', tenant, String(next.version)),
            type: 'PolicyChanged',
            data: { policy: next },
            metadata: { tenant, actor },
          },
        ],
        { expectedRevision: revision < 0n ? 'no_stream' : revision },
      );
      this.cache.set(tenant, { policy: next, revision: result.nextExpectedRevision });
      return next;
    } catch (error) {
      this.cache.delete(tenant);
      if (error instanceof WrongExpectedVersion) throw new PolicyVersionConflict(expectedVersion ?? current.version, -1);
      throw error;
    }
  }

  private async current(tenant: string, fresh = false): Promise<{ policy: TenantPolicy; revision: bigint }> {
    const cached = this.cache.get(tenant);
    if (cached && !fresh) return cached;
    let found: { policy: TenantPolicy; revision: bigint } = { policy: DEFAULT_POLICY, revision: -1n };
    for await (const event of this.deps.log.readStream(policyStream(tenant), { direction: 'backwards', maxCount: 1 })) {
      found = { policy: storedPolicy((event.data as { policy: unknown }).policy), revision: event.revision };
    }
    this.cache.set(tenant, found);
    return found;
  }
}

export class PolicyVersionConflict extends DomainError {
  constructor(expected: number, actual: number) {
    super('POLICY.VERSION_CONFLICT', `expected policy version ${expected}, but it is ${actual < 0 ? 'newer' : actual}`, {
      expected,
      actual,
    });
  }
}
