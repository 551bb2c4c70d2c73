import { streams, tombstoneDecider, type EventLog, type TombstoneState } from '@elma/domain';
import { deterministicUuid } from '@elma/shared';
import { handleCommand, type Folded } from '../command/handle-command';

export { TOMBSTONES_WRITTEN } from '@elma/domain';

interface TenantTombstones {
  /** The stream folded up to its last event read (-1n before the first). */
  folded: Folded<TombstoneState>;
  /** Every fingerprint of those events: the read model the checks consult. */
  fingerprints: Set<string>;
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
    const { folded } = await this.refresh(tenant);
    await handleCommand(
      this.deps.log,
      streams.tombstones(tenant),
      tombstoneDecider,
      { type: 'WriteTombstones', requestId, fingerprints },
      {
        from: folded,
        toEventData: (event) => ({
          id: deterministicUuid('tombstones', tenant, requestId),
          type: event.type,
          data: event.data,
          metadata: { tenant },
        }),
      },
    );
  }

  /** The fingerprints among these that are tombstoned. */
  async matching(tenant: string, fingerprints: string[]): Promise<Set<string>> {
    const known = (await this.refresh(tenant)).fingerprints;
    return new Set(fingerprints.filter((f) => known.has(f)));
  }

  private async refresh(tenant: string): Promise<TenantTombstones> {
    let cached = this.tenants.get(tenant);
    if (!cached) {
      cached = { folded: { state: tombstoneDecider.initialState(), revision: -1n }, fingerprints: new Set() };
      this.tenants.set(tenant, cached);
    }
    for await (const recorded of this.deps.log.readStream(streams.tombstones(tenant), { fromRevision: cached.folded.revision + 1n })) {
      const event = tombstoneDecider.parse(recorded);
      let { state } = cached.folded;
      if (event) {
        for (const fingerprint of event.data.fingerprints) cached.fingerprints.add(fingerprint);
        state = tombstoneDecider.evolve(state, event);
      }
      cached.folded = { state, revision: recorded.revision };
    }
    return cached;
  }
}
