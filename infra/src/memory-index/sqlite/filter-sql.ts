import { SENSITIVITY_RANK, type IndexFilter } from '@elma/domain';

export interface FilterSql {
  /** A boolean SQL expression over `m` (the memories table). */
  where: string;
  params: (string | number)[];
}

/**
 * Compiles the pushed-down policy filter to SQL over `memories m`. Returns
 * undefined when the filter can match nothing (an empty allow-list): default
 * deny, without asking the database.
 */
export function compileFilter(filter: IndexFilter): FilterSql | undefined {
  const clauses: string[] = [];
  const params: (string | number)[] = [];
  const inList = (column: string, values: readonly string[]) => {
    clauses.push(`${column} IN (${values.map(() => '?').join(', ')})`);
    params.push(...values);
  };

  if (filter.statuses.length === 0) return undefined;
  inList('m.status', filter.statuses);

  if (filter.kinds) {
    if (filter.kinds.length === 0) return undefined;
    inList('m.kind', filter.kinds);
  }

  clauses.push('m.sensitivity_rank <= ?');
  params.push(SENSITIVITY_RANK[filter.maxSensitivity]);

  if (filter.purposes) {
    if (filter.purposes.length === 0) return undefined;
    clauses.push(
      `EXISTS (SELECT 1 FROM memory_purposes p WHERE p.memory_rowid = m.rowid AND p.purpose IN (${filter.purposes.map(() => '?').join(', ')}))`,
    );
    params.push(...filter.purposes);
  }

  if (filter.asOf !== undefined) {
    const asOf = millis(filter.asOf, 'asOf');
    clauses.push('m.valid_from <= ? AND (m.valid_to IS NULL OR m.valid_to > ?)');
    params.push(asOf, asOf);
  }

  if (filter.knownAsOf !== undefined) {
    clauses.push('m.recorded_at <= ?');
    params.push(millis(filter.knownAsOf, 'knownAsOf'));
  }

  clauses.push('(m.expires_at IS NULL OR m.expires_at > ?)');
  params.push(millis(filter.now, 'now'));

  return { where: clauses.join(' AND '), params };
}

export function millis(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`${field} is not a valid ISO date-time`);
  return ms;
}
