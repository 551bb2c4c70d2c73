/**
 * Evaluates the subset of the query DSL that `compileFilterDsl` emits over
 * one document, with Elasticsearch's semantics for it, so tests can compare
 * the compiled filter with `matchesFilter` without a cluster. Test-only:
 * production code never imports it. Anything outside the subset throws, so
 * the compiler cannot start emitting a query the tests silently misjudge.
 */
import type { MemoryDocument } from './mapping';
import type { EsQuery } from './filter-dsl';

type Scalar = string | number;

/** A field's indexed values: null, undefined and [] are "no value", which no term-level query matches. */
function valuesOf(doc: MemoryDocument, field: string): Scalar[] {
  const value = (doc as unknown as Record<string, unknown>)[field];
  if (value === null || value === undefined) return [];
  return (Array.isArray(value) ? value : [value]) as Scalar[];
}

/** The one field a term-level query names. */
function only<T>(body: Partial<Record<string, T>>): [string, T] {
  const entries = Object.entries(body);
  if (entries.length !== 1) throw new Error(`expected exactly one field, got ${entries.length}`);
  return entries[0] as [string, T];
}

export function evaluate(query: EsQuery, doc: MemoryDocument): boolean {
  const keys = Object.keys(query);
  if (keys.length !== 1) throw new Error(`a query has exactly one type, got ${keys.join(', ')}`);
  if ('term' in query) {
    const [field, value] = only(query.term);
    return valuesOf(doc, field).includes(value);
  }
  if ('terms' in query) {
    // An empty list matches no document.
    const [field, values] = only(query.terms);
    return valuesOf(doc, field).some((v) => values.includes(v));
  }
  if ('range' in query) {
    const [field, bounds] = only(query.range);
    const unknown = Object.keys(bounds).filter((k) => !['lte', 'gt', 'gte', 'lt'].includes(k));
    if (unknown.length > 0) throw new Error(`unsupported range bounds ${unknown.join(', ')}`);
    return valuesOf(doc, field).some(
      (v) =>
        typeof v === 'number' &&
        (bounds.lte === undefined || v <= bounds.lte) &&
        (bounds.gt === undefined || v > bounds.gt) &&
        (bounds.gte === undefined || v >= bounds.gte) &&
        (bounds.lt === undefined || v < bounds.lt),
    );
  }
  if ('exists' in query) return valuesOf(doc, query.exists.field).length > 0;
  if ('bool' in query) {
    const { filter = [], should, minimum_should_match, must_not = [], ...rest } = query.bool;
    if (Object.keys(rest).length > 0) throw new Error(`unsupported bool keys ${Object.keys(rest).join(', ')}`);
    if (!filter.every((q) => evaluate(q, doc))) return false;
    if (must_not.some((q) => evaluate(q, doc))) return false;
    if (should === undefined) return true;
    // Elasticsearch's default: `should` is required only when there is no `filter` (or `must`) beside it.
    const required = minimum_should_match ?? (filter.length > 0 ? 0 : 1);
    return should.filter((q) => evaluate(q, doc)).length >= required;
  }
  throw new Error(`unsupported query ${JSON.stringify(query)}`);
}
