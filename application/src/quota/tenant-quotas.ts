import {
  contentBytes,
  effectiveQuotas,
  exceededStorage,
  QuotaExceeded,
  quotaName,
  QuotaRaiseForbidden,
  Quotas,
  raisedQuotas,
  retryAfterSeconds,
  TokenBuckets,
  type EffectiveQuotas,
  type QuotaCode,
  type StoredUsage,
  type TenantPolicy,
} from '@elma/domain';
import type { StoredUsageCounter } from './stored-usage';

/** A write admitted by the storage quotas; `release` takes its reservation back when the write fails. */
export interface Admitted {
  release(): void;
}

/**
 * The tenant quotas of one API process: rate buckets for ingest and recall,
 * and the storage quotas against the stored-usage counters. Every check
 * happens before the work it guards starts, and a refusal takes nothing: no
 * tokens, no reservation, no event written. Limits come from the tenant's
 * policy, else from the platform defaults.
 */
export class TenantQuotas {
  private readonly buckets = new TokenBuckets();
  private readonly refused = new Map<string, Map<QuotaCode, number>>();
  private readonly seen = new Set<string>();

  constructor(
    private readonly deps: {
      policies: { get(tenant: string): Promise<TenantPolicy> };
      platform: EffectiveQuotas;
      usage: StoredUsageCounter;
      /** Milliseconds of a monotonic clock. */
      nowMs: () => number;
    },
  ) {}

  async limits(tenant: string): Promise<EffectiveQuotas> {
    this.seen.add(tenant);
    return effectiveQuotas((await this.deps.policies.get(tenant)).quotas, this.deps.platform);
  }

  /** A recall may start: takes one token of the tenant's recall bucket, or refuses with QUOTA.RECALL_RATE. */
  async admitRecall(tenant: string): Promise<void> {
    const limits = await this.limits(tenant);
    this.takeTokens(tenant, 'recall', limits.recall, 1, 'QUOTA.RECALL_RATE', 'recall requests');
  }

  /**
   * A batch of `contents` (one per event or memory) may be written: it fits
   * the storage quotas and, for ingest, the tenant's event rate. All or
   * nothing: a batch that does not fit whole is refused whole.
   */
  async admitWrite(tenant: string, contents: unknown[], options: { rate: 'ingest' | null }): Promise<Admitted> {
    const limits = await this.limits(tenant);
    const added: StoredUsage = { memories: contents.length, bytes: contents.reduce<number>((sum, c) => sum + contentBytes(c), 0) };
    if (options.rate === 'ingest' && contents.length > limits.ingest.burst) {
      this.refuse(
        tenant,
        'QUOTA.BATCH_EXCEEDS_BURST',
        `the batch has more events than the tenant's ingest burst (${limits.ingest.burst}); split it`,
      );
    }
    await this.deps.usage.fresh(tenant);
    // Check, take and reserve in one synchronous step, so concurrent batches see each other's reservations.
    const attempt = (): Admitted | QuotaCode => {
      const over = exceededStorage(this.deps.usage.peek(tenant), added, limits);
      if (over) return over;
      if (options.rate === 'ingest') {
        this.takeTokens(tenant, 'ingest', limits.ingest, contents.length, 'QUOTA.INGEST_RATE', 'events');
      }
      return { release: this.deps.usage.reserve(tenant, added) };
    };
    let outcome = attempt();
    if (typeof outcome === 'string') {
      // Refuse on the truth, not on an estimate: erasures since the last count may have made room.
      await this.deps.usage.recount(tenant);
      outcome = attempt();
    }
    if (typeof outcome === 'string') {
      const limit = outcome === 'QUOTA.STORED_MEMORIES' ? `${limits.storedMemories} memories` : `${limits.storedBytes} bytes`;
      this.refuse(tenant, outcome, `the tenant's storage quota (${limit}) does not leave room for this write`);
    }
    return outcome;
  }

  /**
   * Refuses a policy document that would raise the tenant's quotas above both
   * what it has and the platform defaults. A document whose quotas do not
   * parse is left to the policy's own validation (422).
   */
  async refuseRaise(tenant: string, document: unknown): Promise<void> {
    const parsed = Quotas.optional().safeParse((document as { quotas?: unknown } | null)?.quotas);
    if (!parsed.success) return;
    const raised = raisedQuotas(effectiveQuotas(parsed.data, this.deps.platform), await this.limits(tenant), this.deps.platform);
    if (raised.length > 0) throw new QuotaRaiseForbidden(raised);
  }

  /** A request over the tenant's concurrency quota (counted by the admission gate). */
  refuseConcurrency(tenant: string, limit: number): QuotaExceeded {
    this.count(tenant, 'QUOTA.CONCURRENT_REQUESTS');
    return new QuotaExceeded('QUOTA.CONCURRENT_REQUESTS', `the tenant has ${limit} requests in progress, its quota; retry after 1 s`, 1);
  }

  /** The tenants whose quotas this process has applied (tenant ids, bounded by the tenants that hold valid tokens). */
  tenants(): string[] {
    return [...this.seen];
  }

  /** Refusals per tenant and quota since the process started, for the metrics. */
  refusals(): { tenant: string; quota: string; count: number }[] {
    return [...this.refused].flatMap(([tenant, codes]) => [...codes].map(([code, count]) => ({ tenant, quota: quotaName(code), count })));
  }

  private takeTokens(
    tenant: string,
    bucket: 'ingest' | 'recall',
    limit: EffectiveQuotas['recall'],
    cost: number,
    code: QuotaCode,
    what: string,
  ): void {
    const decision = this.buckets.take(`${tenant}\u0000${bucket}`, limit, cost, this.deps.nowMs());
    if (decision.allowed) return;
    const seconds = retryAfterSeconds(decision.retryAfterMs ?? 1000);
    this.refuse(
      tenant,
      code,
      `over the tenant's rate of ${limit.ratePerSecond} ${what} per second (burst ${limit.burst}); retry after ${seconds} s`,
      seconds,
    );
  }

  private refuse(tenant: string, code: QuotaCode, message: string, retryAfter?: number): never {
    this.count(tenant, code);
    throw new QuotaExceeded(code, message, retryAfter);
  }

  private count(tenant: string, code: QuotaCode): void {
    const codes = this.refused.get(tenant) ?? new Map<QuotaCode, number>();
    codes.set(code, (codes.get(code) ?? 0) + 1);
    this.refused.set(tenant, codes);
  }
}
