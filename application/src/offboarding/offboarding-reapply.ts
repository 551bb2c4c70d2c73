import { PLATFORM_TENANT, type EventLog, type KeyVault, type MemoryIndex, type TenantOffboardingLedgerEntry } from '@elma/domain';
import type { AuditLog } from '../audit/audit-log';
import type { TenantClosures } from './tenant-closures';
import { tenantStreams } from './tenant-streams';

/** What re-applying one off-boarding found to do again (counts only). */
export interface OffboardingReapplied {
  /** Anything at all: the tenant's key, index, streams or closure came back with the restored data. */
  changed: boolean;
  keyDestroyed: boolean;
  indexDropped: boolean;
  streamsDeleted: number;
  closed: boolean;
}

/** Any key id: the vault answers "shredded" for every one of a destroyed tenant. */
const PROBE_KEY = 'offboarding-probe';

/**
 * Applies a completed tenant off-boarding again to data that may predate it (a restored backup, an
 * EventStoreDB or Elasticsearch snapshot): destroys the tenant's key, drops its index, deletes its streams and
 * closes its name for good (`tenants-_system-closed`). Each step is idempotent; an off-boarding that found
 * something to do again writes one audit entry to the platform trail (the tenant's own trail is gone with it).
 */
export class OffboardingReapply {
  constructor(
    private readonly deps: {
      log: EventLog;
      vault: KeyVault;
      index: MemoryIndex;
      closures: TenantClosures;
      audit: AuditLog;
      actor: string;
    },
  ) {}

  async reapply(entry: TenantOffboardingLedgerEntry): Promise<OffboardingReapplied> {
    const { tenant, requestId } = entry;
    // The name first: from here no token of the tenant is served, whatever the rest finds.
    const closed = (await this.deps.closures.closure(tenant, { fresh: true })) !== 'offboarded';
    if (closed) {
      try {
        await this.deps.closures.offboarded(tenant, requestId, entry.completedAt);
      } catch (error) {
        // Another process re-applying the same ledger (an API and a worker started together) closed it first.
        if ((await this.deps.closures.closure(tenant, { fresh: true })) !== 'offboarded') throw error;
      }
    }
    // Then the key: the restored ciphertext of the tenant's events is unreadable from here.
    const keyDestroyed = !(await this.deps.vault.isShredded(tenant, PROBE_KEY));
    await this.deps.vault.destroyTenant(tenant);
    const indexDropped = (await this.deps.index.tenants()).includes(tenant);
    await this.deps.index.dropTenant(tenant);
    const { names } = await tenantStreams(this.deps.log, tenant);
    await this.deps.log.deleteStreams(names);
    const changed = closed || keyDestroyed || indexDropped || names.length > 0;
    if (changed) {
      await this.deps.audit.record({
        tenant: PLATFORM_TENANT,
        actor: this.deps.actor,
        subject: null,
        operation: 'erase',
        resourceIds: [`tenant:${tenant}`, requestId, 'reapplied'],
        decision: { effect: 'allow', rule: 'offboard:reapply' },
        requestId,
      });
    }
    return { changed, keyDestroyed, indexDropped, streamsDeleted: names.length, closed };
  }
}
