import { streams, type EventLog } from '@elma/domain';
import { deterministicUuid } from '@elma/shared';

export const TOMBSTONES_WRITTEN = 'TombstonesWritten';

interface TenantTombstones {
  fingerprints: Set<string>;
  /** Last revision of the tombstone stream folded in; -1n before the first. */
  revision: bigint;
}

/**
 * Re-derivation tombstones (paper, section 5.4 'Forgetting and deletion', step 5): keyed fingerprints of erased
 * content in `tombstone-{tenant}`, consulted by ingest, explicit writes and
 * consolidation so that the same content cannot be stored again from a
 * leftover copy. Each check first reads what other processes appended since
 * the last one (one indexed read), so a tombstone written by a worker binds
 * an API process at once.
 */
export class Tombstones {
  private readonly tenants = new Map<string, TenantTombstones>();

  constructor(private readonly deps: { log: EventLog }) {}

  /** Idempotent per erasure request: a retried write appends nothing. */
  async write(tenant: string, requestId: string, fingerprints: string[]): Promise<void> {
    if (fingerprints.length === 0) return;
    await this.deps.log.append(
      streams.tombstones(tenant),
      [
        {
          id: deterministicUuid('tombstones', tenant, requestId),
          type: TOMBSTONES_WRITTEN,
          data: { requestId, fingerprints: [...new Set(fingerprints)].sort() },
          metadata: { tenant },
        },
      ],
      { expectedRevision: 'any' },
    );
  }

  /** The fingerprints among these that are tombstoned. */
  async matching(tenant: string, fingerprints: string[]): Promise<Set<string>> {
    const known = await this.refresh(tenant);
    return new Set(fingerprints.filter((f) => known.has(f)));
  }

  private async refresh(tenant: string): Promise<Set<string>> {
    let state = this.tenants.get(tenant);
    if (!state) {
      state = { fingerprints: new Set(), revision: -1n };
      this.tenants.set(tenant, state);
    }
    for await (const event of this.deps.log.readStream(streams.tombstones(tenant), { fromRevision: state.revision + 1n })) {
      for (const fingerprint of (event.data as { fingerprints: string[] }).fingerprints) state.fingerprints.add(fingerprint);
      state.revision = event.revision;
    }
    return state.fingerprints;
  }
}
