import { SENSITIVITY_RANK, type MemoryRecord } from '../memory/record';
import { isExcluded, matchesClauses } from '../policy/compile';
import type { IndexFilter } from './port';

/**
 * The in-memory twin of the filter an index adapter pushes into its query.
 * Recall re-checks every hit with it (defence in depth): if an adapter's
 * pushdown ever drifts, the hit is dropped rather than leaked.
 */
export function matchesFilter(record: MemoryRecord, filter: IndexFilter): boolean {
  if (filter.kinds && !filter.kinds.includes(record.kind)) return false;
  if (!filter.statuses.includes(record.status)) return false;
  if (SENSITIVITY_RANK[record.policy.sensitivity] > SENSITIVITY_RANK[filter.maxSensitivity]) return false;
  if (filter.purposes && !filter.purposes.some((p) => record.policy.purposes.includes(p))) return false;
  if (filter.asOf !== undefined) {
    const at = Date.parse(filter.asOf);
    if (Date.parse(record.validFrom) > at) return false;
    if (record.validTo !== null && Date.parse(record.validTo) <= at) return false;
  }
  if (filter.knownAsOf !== undefined && Date.parse(record.recordedAt) > Date.parse(filter.knownAsOf)) return false;
  if (record.retention.expiresAt !== null && Date.parse(record.retention.expiresAt) <= Date.parse(filter.now)) return false;
  if (isExcluded(record, filter.exclude)) return false;
  if (filter.clauses && !matchesClauses(record, filter.clauses)) return false;
  return true;
}
