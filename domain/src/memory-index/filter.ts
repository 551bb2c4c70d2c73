import { SENSITIVITY_RANK, type MemoryRecord } from '../memory/record';
import { isExcluded, matchesClauses } from '../policy/compile';
import { compareListed } from '../memory/listing';
import type { IndexFilter, ListQuery } from './port';
import { matchesScope } from './scope';

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
  if (filter.scope && !matchesScope(record, filter.scope)) return false;
  if (filter.workingSession !== undefined && record.kind === 'working' && record.session !== filter.workingSession) return false;
  return true;
}

/** The in-memory twin of `MemoryIndex.list`'s admission: the filter, the subject, the working-memory rule and the position. */
export function matchesListing(record: MemoryRecord, query: Omit<ListQuery, 'tenant' | 'limit'>): boolean {
  if (!matchesFilter(record, query.filter)) return false;
  if (query.subject !== undefined && record.subject !== query.subject) return false;
  if (
    query.working &&
    record.kind === 'working' &&
    record.policy.owner !== query.working.owner &&
    (query.working.session === undefined || record.session !== query.working.session)
  )
    return false;
  return query.after === undefined || compareListed(query.after, record) < 0;
}
