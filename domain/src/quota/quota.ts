import { z } from 'zod';
import { DomainError } from '../shared/errors';
import type { BucketLimit } from './token-bucket';

/**
 * Bounds of the quota numbers a policy may set. Outside them a value is a
 * mistake (a rate of 0 blocks the tenant for ever, a burst of 10^12 is no
 * limit at all), refused with 422 when the policy is written.
 */
export const QUOTA_BOUNDS = {
  ratePerSecond: { min: 0.01, max: 100_000 },
  burst: { min: 1, max: 1_000_000 },
  storedMemories: { min: 1, max: 1_000_000_000 },
  /** 1 KiB to 1 PiB. */
  storedBytes: { min: 1024, max: 2 ** 50 },
  concurrentRequests: { min: 1, max: 10_000 },
} as const;

const Rate = z.number().min(QUOTA_BOUNDS.ratePerSecond.min).max(QUOTA_BOUNDS.ratePerSecond.max);
const Burst = z.number().int().min(QUOTA_BOUNDS.burst.min).max(QUOTA_BOUNDS.burst.max);

/**
 * A tenant's quotas, part of its policy. Every field is optional: what the
 * policy leaves out is the platform's default (ELMA_QUOTA_* variables), so an
 * operator can raise the defaults for everyone without touching a policy.
 */
export const Quotas = z.strictObject({
  /** Events appended per second (a batch of n events costs n), with a burst an idle tenant may spend at once. */
  ingest: z.strictObject({ eventsPerSecond: Rate, burst: Burst }).optional(),
  /** Recall requests per second (REST and GraphQL alike), with a burst. */
  recall: z.strictObject({ requestsPerSecond: Rate, burst: Burst }).optional(),
  /** Memory records the tenant may hold (episodes and derived records alike). */
  storedMemories: z.number().int().min(QUOTA_BOUNDS.storedMemories.min).max(QUOTA_BOUNDS.storedMemories.max).optional(),
  /** Bytes of memory content (UTF-8 JSON of each record's content) the tenant may hold. */
  storedBytes: z.number().int().min(QUOTA_BOUNDS.storedBytes.min).max(QUOTA_BOUNDS.storedBytes.max).optional(),
  /** The tenant's API requests in progress at once (running or waiting for a slot), all kinds together. */
  concurrentRequests: z.number().int().min(QUOTA_BOUNDS.concurrentRequests.min).max(QUOTA_BOUNDS.concurrentRequests.max).optional(),
});
export type Quotas = z.infer<typeof Quotas>;

/** Quotas with every value decided: the policy's where it sets one, the platform's default elsewhere. */
export interface EffectiveQuotas {
  ingest: BucketLimit;
  recall: BucketLimit;
  storedMemories: number;
  storedBytes: number;
  concurrentRequests: number;
}

/**
 * The platform's defaults when no variable says otherwise: generous enough
 * that a tenant working normally never meets them, tight enough that one
 * runaway client cannot take a 2-core server for itself.
 */
export const DEFAULT_QUOTAS: EffectiveQuotas = {
  ingest: { ratePerSecond: 500, burst: 5_000 },
  recall: { ratePerSecond: 50, burst: 200 },
  storedMemories: 5_000_000,
  storedBytes: 10 * 1024 ** 3,
  concurrentRequests: 64,
};

export function effectiveQuotas(policy: Quotas | undefined, platform: EffectiveQuotas): EffectiveQuotas {
  return {
    ingest: policy?.ingest ? { ratePerSecond: policy.ingest.eventsPerSecond, burst: policy.ingest.burst } : platform.ingest,
    recall: policy?.recall ? { ratePerSecond: policy.recall.requestsPerSecond, burst: policy.recall.burst } : platform.recall,
    storedMemories: policy?.storedMemories ?? platform.storedMemories,
    storedBytes: policy?.storedBytes ?? platform.storedBytes,
    concurrentRequests: policy?.concurrentRequests ?? platform.concurrentRequests,
  };
}

/** One code per quota; the API answers each with 429 (with Retry-After for the rates and concurrency). */
export type QuotaCode =
  | 'QUOTA.INGEST_RATE'
  | 'QUOTA.RECALL_RATE'
  | 'QUOTA.CONCURRENT_REQUESTS'
  | 'QUOTA.STORED_MEMORIES'
  | 'QUOTA.STORED_BYTES'
  | 'QUOTA.BATCH_EXCEEDS_BURST';

export const QUOTA_CODES: readonly QuotaCode[] = [
  'QUOTA.INGEST_RATE',
  'QUOTA.RECALL_RATE',
  'QUOTA.CONCURRENT_REQUESTS',
  'QUOTA.STORED_MEMORIES',
  'QUOTA.STORED_BYTES',
  'QUOTA.BATCH_EXCEEDS_BURST',
];

/**
 * A request refused by one of the tenant's quotas, before any of its work
 * started (nothing of a refused batch is written). The message names the
 * quota and its limit, never the tenant, its usage or the request's content.
 * `retryAfterSeconds` is set for the rates and concurrency only: stored
 * memories come back when the tenant erases or an operator raises the quota,
 * not after a time anyone can promise.
 */
export class QuotaExceeded extends DomainError {
  constructor(
    code: QuotaCode,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(code, message, retryAfterSeconds === undefined ? { quota: code } : { quota: code, retryAfterSeconds });
  }
}

/** The metric and log name of a quota (`ingest_rate`, …), from its code. */
export function quotaName(code: QuotaCode): string {
  return code.slice('QUOTA.'.length).toLowerCase();
}

/** What a tenant stores, as the storage quotas count it. */
export interface StoredUsage {
  memories: number;
  bytes: number;
}

const encoder = new TextEncoder();

/** The bytes a memory's content counts for: its UTF-8 JSON, the same for an event at ingest and its record in the index. */
export function contentBytes(content: unknown): number {
  return encoder.encode(JSON.stringify(content) ?? '').length;
}

/** Which storage quota `usage + added` would exceed, if any (memories first). */
export function exceededStorage(
  usage: StoredUsage,
  added: StoredUsage,
  limits: Pick<EffectiveQuotas, 'storedMemories' | 'storedBytes'>,
): QuotaCode | undefined {
  if (added.memories > 0 && usage.memories + added.memories > limits.storedMemories) return 'QUOTA.STORED_MEMORIES';
  if (added.bytes > 0 && usage.bytes + added.bytes > limits.storedBytes) return 'QUOTA.STORED_BYTES';
  return undefined;
}

/**
 * The quotas a policy change would raise above both the tenant's current
 * quotas and the platform defaults: a tenant's own admin may tighten its
 * quotas (to protect its budget from a runaway client) or keep what the
 * platform granted, but only the platform's operator may grant more.
 */
export function raisedQuotas(proposed: EffectiveQuotas, current: EffectiveQuotas, platform: EffectiveQuotas): string[] {
  const values = (q: EffectiveQuotas): Record<string, number> => ({
    'ingest.eventsPerSecond': q.ingest.ratePerSecond,
    'ingest.burst': q.ingest.burst,
    'recall.requestsPerSecond': q.recall.ratePerSecond,
    'recall.burst': q.recall.burst,
    storedMemories: q.storedMemories,
    storedBytes: q.storedBytes,
    concurrentRequests: q.concurrentRequests,
  });
  const [next, now, base] = [values(proposed), values(current), values(platform)];
  return Object.keys(next).filter((name) => next[name] > Math.max(now[name], base[name]));
}

/** A policy change would grant the tenant more than the platform gives it, by a caller who may not. */
export class QuotaRaiseForbidden extends DomainError {
  constructor(readonly quotas: string[]) {
    super(
      'QUOTA.RAISE_FORBIDDEN',
      `only the platform operator may raise these quotas above the platform defaults: ${quotas.map((q) => `quotas.${q}`).join(', ')}`,
      { quotas },
    );
  }
}
