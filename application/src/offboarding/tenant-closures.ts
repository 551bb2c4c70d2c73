import { streams, type EventLog } from '@elma/domain';

/** Why a tenant's tokens no longer work: it is being off-boarded (sealed) or it was (closed for good). */
export type TenantClosure = 'sealed' | 'offboarded';

interface ClosureEvent {
  tenant: string;
  requestId: string;
  at: string;
}

/**
 * The tombstones of off-boarded tenants: `tenants-_system-closed` lists every
 * tenant sealed for off-boarding (`TenantSealed`, lifted by `TenantUnsealed`
 * when the workflow stops before destroying anything) and every tenant
 * off-boarded (`TenantOffboarded`, never lifted). Requests with a token of
 * such a tenant are refused (TENANT.OFFBOARDED), so its name cannot be used
 * to re-create a tenant over the old data.
 *
 * Every process reads the stream forward from where it stopped, at most once
 * per `refreshMs`: a tenant sealed by the worker is refused by an API
 * process within that time (the workflow waits longer than that after sealing).
 */
export class TenantClosures {
  private readonly closed = new Map<string, TenantClosure>();
  /** The off-boarding that sealed or closed each tenant. */
  private readonly by = new Map<string, string>();
  private revision = -1n;
  private readAt = -Infinity;
  private reading: Promise<void> | undefined;

  constructor(private readonly deps: { log: EventLog; refreshMs?: number; now?: () => number }) {}

  /** The closure of the tenant, undefined for an open (or unknown) one. */
  async closure(tenant: string, options: { fresh?: boolean } = {}): Promise<TenantClosure | undefined> {
    const now = (this.deps.now ?? Date.now)();
    if (options.fresh || now - this.readAt >= (this.deps.refreshMs ?? 1_000)) {
      this.reading ??= this.catchUp().finally(() => {
        this.reading = undefined;
      });
      await this.reading;
      this.readAt = now;
    }
    return this.closed.get(tenant);
  }

  /** The request that sealed (or closed) the tenant, as of the last read. */
  closedBy(tenant: string): string | undefined {
    return this.by.get(tenant);
  }

  /** Seals the tenant: from now on its tokens are refused. Idempotent. */
  async seal(tenant: string, requestId: string, at: string): Promise<void> {
    if ((await this.closure(tenant, { fresh: true })) !== undefined) return;
    await this.append('TenantSealed', { tenant, requestId, at });
  }

  /** Lifts a seal whose off-boarding stopped before anything was destroyed. A tenant off-boarded stays closed. */
  async unseal(tenant: string, requestId: string, at: string): Promise<void> {
    if ((await this.closure(tenant, { fresh: true })) !== 'sealed') return;
    await this.append('TenantUnsealed', { tenant, requestId, at });
  }

  /** Closes the tenant for good. Idempotent. */
  async offboarded(tenant: string, requestId: string, at: string): Promise<void> {
    if ((await this.closure(tenant, { fresh: true })) === 'offboarded') return;
    await this.append('TenantOffboarded', { tenant, requestId, at });
  }

  private async append(type: string, data: ClosureEvent): Promise<void> {
    await this.deps.log.append(streams.tenantClosures, [{ id: crypto.randomUUID(), type, data: { ...data } }], {
      expectedRevision: this.revision < 0n ? 'no_stream' : this.revision,
    });
    await this.catchUp();
  }

  private async catchUp(): Promise<void> {
    const from = this.revision + 1n;
    for await (const event of this.deps.log.readStream(streams.tenantClosures, from > 0n ? { fromRevision: from } : {})) {
      const { tenant, requestId } = event.data as ClosureEvent;
      if (event.type === 'TenantSealed' && this.closed.get(tenant) !== 'offboarded') {
        this.closed.set(tenant, 'sealed');
        this.by.set(tenant, requestId);
      }
      if (event.type === 'TenantUnsealed' && this.closed.get(tenant) === 'sealed') {
        this.closed.delete(tenant);
        this.by.delete(tenant);
      }
      if (event.type === 'TenantOffboarded') {
        this.closed.set(tenant, 'offboarded');
        this.by.set(tenant, requestId);
      }
      this.revision = event.revision;
    }
  }
}
