import { describe, expect, it } from 'vitest';
import { PolicyDocument, TenantPolicy } from '../policy/policy';
import { DEFAULT_QUOTAS, effectiveQuotas, QUOTA_CODES, QuotaExceeded, quotaName, Quotas, raisedQuotas } from './quota';

describe('quotas in the tenant policy', () => {
  it('a policy without quotas gets the platform defaults', () => {
    const policy = TenantPolicy.parse({ version: 1, rules: [] });
    expect(policy.quotas).toBeUndefined();
    expect(effectiveQuotas(policy.quotas, DEFAULT_QUOTAS)).toEqual(DEFAULT_QUOTAS);
  });

  it('what a policy sets replaces the default of that quota only', () => {
    const policy = PolicyDocument.parse({ rules: [], quotas: { recall: { requestsPerSecond: 2, burst: 4 }, storedMemories: 1000 } });
    expect(effectiveQuotas(policy.quotas, DEFAULT_QUOTAS)).toEqual({
      ...DEFAULT_QUOTAS,
      recall: { ratePerSecond: 2, burst: 4 },
      storedMemories: 1000,
    });
  });

  it.each([
    ['a rate of zero', { ingest: { eventsPerSecond: 0, burst: 10 } }],
    ['a negative rate', { recall: { requestsPerSecond: -1, burst: 10 } }],
    ['an absurd rate', { recall: { requestsPerSecond: 1e9, burst: 10 } }],
    ['a fractional burst', { ingest: { eventsPerSecond: 1, burst: 1.5 } }],
    ['a burst of a billion', { ingest: { eventsPerSecond: 1, burst: 1e9 } }],
    ['a rate without its burst', { ingest: { eventsPerSecond: 1 } }],
    ['zero stored memories', { storedMemories: 0 }],
    ['stored bytes beyond a pebibyte', { storedBytes: 2 ** 51 }],
    ['stored bytes as text', { storedBytes: '10GB' }],
    ['unlimited concurrency', { concurrentRequests: Number.POSITIVE_INFINITY }],
    ['an unknown quota', { storedVectors: 10 }],
  ])('%s is refused', (_, quotas) => {
    expect(Quotas.safeParse(quotas).success).toBe(false);
    expect(PolicyDocument.safeParse({ rules: [], quotas }).success).toBe(false);
  });

  it('every quota code has the AREA.CODE form and a metric name', () => {
    for (const code of QUOTA_CODES) {
      expect(code).toMatch(/^QUOTA\.[A-Z_]+$/);
      expect(quotaName(code)).toMatch(/^[a-z_]+$/);
    }
  });

  it('a rate refusal carries its retry time; a storage refusal does not', () => {
    expect(new QuotaExceeded('QUOTA.RECALL_RATE', 'x', 3).details).toEqual({ quota: 'QUOTA.RECALL_RATE', retryAfterSeconds: 3 });
    expect(new QuotaExceeded('QUOTA.STORED_BYTES', 'x').details).toEqual({ quota: 'QUOTA.STORED_BYTES' });
  });

  it('a tenant may lower its quotas or keep them, not raise them above both what it has and the platform default', () => {
    const lowered = effectiveQuotas({ recall: { requestsPerSecond: 1, burst: 2 }, storedMemories: 10 }, DEFAULT_QUOTAS);
    // Lowering, and going back up to the platform default, raise nothing.
    expect(raisedQuotas(lowered, DEFAULT_QUOTAS, DEFAULT_QUOTAS)).toEqual([]);
    expect(raisedQuotas(DEFAULT_QUOTAS, lowered, DEFAULT_QUOTAS)).toEqual([]);
    // Above the default: named, field by field.
    const above = effectiveQuotas(
      { storedMemories: DEFAULT_QUOTAS.storedMemories + 1, ingest: { eventsPerSecond: 1, burst: 10_000 } },
      DEFAULT_QUOTAS,
    );
    expect(raisedQuotas(above, DEFAULT_QUOTAS, DEFAULT_QUOTAS)).toEqual(['ingest.burst', 'storedMemories']);
    // What the platform operator granted before may be kept (a tenant admin editing its rules re-sends it).
    expect(raisedQuotas(above, above, DEFAULT_QUOTAS)).toEqual([]);
  });
});
