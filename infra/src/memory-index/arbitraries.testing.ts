import fc from 'fast-check';
import { MemoryKind, MemoryStatus, RetentionClass, Sensitivity, type Ancestry, type ReadClause } from '@elma/domain';

/** Property-test vocabularies shared by the index contract and the filter compilers' specs. */
export const OWNERS = ['ann', 'bob', 'cy'];
export const PROJECTS = ['falcon', 'eagle'];
export const PURPOSES = ['support', 'billing', 'hr'];

/**
 * Weighted towards the permissive side: a filter of many random conjuncts
 * otherwise admits almost nothing, and the cases worth comparing are the
 * admitted ones and their near misses.
 */
export const sometimes = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 2 }, { arbitrary: arb, weight: 1 });
export const defined = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/**
 * What a derived record inherited from upstream, or nothing (a record derived
 * from nothing, or before ancestry was kept): ancestors among `ids`, and
 * owners and projects that may differ from the record's own.
 */
export const ancestry = (ids: readonly string[]): fc.Arbitrary<Ancestry | undefined> =>
  sometimes(
    fc.record({
      ids: fc.subarray([...ids], { maxLength: 3 }),
      owners: fc.subarray(OWNERS),
      projects: fc.subarray(PROJECTS),
      expiresAt: fc.constant(null),
    }),
  );

/** One compiled read clause; `setOf` draws its lists (kinds, statuses, retention classes). */
export const readClause = (setOf: <T>(values: readonly T[]) => fc.Arbitrary<T[]>): fc.Arbitrary<ReadClause> =>
  fc
    .record({
      ruleId: fc.constantFrom('r1', 'r2'),
      maxSensitivity: fc.constantFrom(...Sensitivity.options),
      kinds: sometimes(setOf(MemoryKind.options)),
      owner: sometimes(fc.constantFrom(...OWNERS)),
      project: sometimes(fc.constantFrom(...PROJECTS)),
      statuses: sometimes(setOf(MemoryStatus.options)),
      retentionClasses: sometimes(setOf(RetentionClass.options)),
      purpose: sometimes(fc.constantFrom(...PURPOSES)),
    })
    .map(defined);
