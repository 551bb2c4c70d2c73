import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isHeld, type LegalHold } from '../legal-hold/legal-hold';
import { matchesFilter } from '../memory-index/filter';
import type { IndexFilter } from '../memory-index/port';
import type { ReadClause } from '../policy/clause';
import { evaluate } from '../policy/evaluate';
import { DEFAULT_POLICY, resourceOf, type PolicySubject } from '../policy/policy';
import { makeRecord } from '../testing';
import { inheritedRestrictions, restrictionKeys, withoutAncestry } from './lineage';
import { Sensitivity, type MemoryRecord } from './record';

const OWNERS = ['ann', 'bob', 'cy'];
const PROJECTS = ['falcon', 'eagle'];
const PURPOSES = ['support', 'billing', 'hr'];
const DAY = 86_400_000;
const BASE = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (days: number) => new Date(BASE + days * DAY).toISOString();
const sometimes = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 2 });
/** The object without its undefined fields (optional properties must be absent, not undefined). */
const defined = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

interface Root {
  owner: string;
  project?: string;
  sensitivity: Sensitivity;
  purposes: string[];
  expiresIn?: number;
}
interface Derivation {
  parents: number[];
  owner?: string;
}

/** An input as ingest makes it: an owner (its subject), perhaps a project, a sensitivity, purposes and an expiry. */
const root: fc.Arbitrary<Root> = fc.record({
  owner: fc.constantFrom(...OWNERS),
  project: sometimes(fc.constantFrom(...PROJECTS)),
  sensitivity: fc.constantFrom(...Sensitivity.options),
  purposes: fc.subarray(PURPOSES, { minLength: 1 }),
  expiresIn: sometimes(fc.integer({ min: 0, max: 6 })),
});

/** A derivation: some earlier records as inputs (indices taken modulo), an owner (a writer may name another subject). */
const derivation: fc.Arbitrary<Derivation> = fc.record({
  parents: fc.uniqueArray(fc.nat(), { minLength: 1, maxLength: 3 }),
  owner: sometimes(fc.constantFrom(...OWNERS)),
});

/**
 * A lineage DAG: roots, then records each derived from earlier ones with the
 * domain's rule (`inheritedRestrictions`), as consolidation and explicit
 * writes do. Returns the records and each one's ancestors.
 */
function buildDag(roots: Root[], derivations: Derivation[]) {
  const records: MemoryRecord[] = roots.map((r, i) =>
    makeRecord({
      id: `mem_ep_e${i}`,
      subject: r.owner,
      kind: 'episodic',
      provenance: { sourceEventIds: [`e${i}`], parentIds: [], rule: 'ingest.extract', ruleVersion: '1' },
      policy: { owner: r.owner, roles: [], purposes: r.purposes, sensitivity: r.sensitivity, ...(r.project ? { project: r.project } : {}) },
      retention: { class: 'standard', expiresAt: r.expiresIn === undefined ? null : iso(r.expiresIn) },
    }),
  );
  const ancestors: Set<number>[] = roots.map(() => new Set());
  for (const [n, d] of derivations.entries()) {
    const parents = [...new Set(d.parents.map((p) => p % records.length))];
    const inputs = parents.map((p) => records[p]);
    const inherited = inheritedRestrictions(inputs);
    const owner = d.owner ?? inputs[0].policy.owner;
    records.push(
      makeRecord({
        id: `mem_cs_${n}`,
        subject: owner,
        kind: 'semantic',
        provenance: {
          sourceEventIds: [...new Set(inputs.flatMap((r) => r.provenance.sourceEventIds))],
          parentIds: inputs.map((r) => r.id),
          ancestry: inherited.ancestry,
          rule: 'consolidate.summary',
          ruleVersion: '1',
        },
        policy: {
          owner,
          roles: [],
          purposes: inherited.purposes,
          sensitivity: inherited.sensitivity,
          ...(inherited.project !== undefined ? { project: inherited.project } : {}),
        },
        retention: { class: 'standard', expiresAt: inherited.ancestry.expiresAt },
      }),
    );
    ancestors.push(new Set(parents.flatMap((p) => [p, ...ancestors[p]])));
  }
  return { records, ancestors };
}

/** A caller's compiled read policy, restricted to the attributes that flow along lineage. */
const clause: fc.Arbitrary<ReadClause> = fc
  .record({
    ruleId: fc.constant('r'),
    maxSensitivity: fc.constantFrom(...Sensitivity.options),
    owner: sometimes(fc.constantFrom(...OWNERS)),
    project: sometimes(fc.constantFrom(...PROJECTS)),
    purpose: sometimes(fc.constantFrom(...PURPOSES)),
  })
  .map(defined);

/** Holds naming a record, an event, an owner or a project: any restriction a hold can place on an input. */
const hold: fc.Arbitrary<LegalHold> = fc
  .record({
    recordIds: sometimes(
      fc.subarray(
        [...Array.from({ length: 6 }, (_, i) => `mem_ep_e${i}`), ...Array.from({ length: 6 }, (_, i) => `mem_cs_${i}`), 'e0', 'e1'],
        { minLength: 1, maxLength: 2 },
      ),
    ),
    subjects: sometimes(fc.subarray(OWNERS, { minLength: 1, maxLength: 1 })),
    projects: sometimes(fc.subarray(PROJECTS, { minLength: 1, maxLength: 1 })),
  })
  .filter((s) => s.recordIds !== undefined || s.subjects !== undefined || s.projects !== undefined)
  .map((scope) => ({
    id: 'hold_1',
    reason: 'matter',
    placedBy: 'legal',
    placedAt: iso(0),
    scope: defined(scope),
  }));

const filter: fc.Arbitrary<IndexFilter> = fc
  .record({
    maxSensitivity: fc.constantFrom(...Sensitivity.options),
    purposes: sometimes(fc.subarray(PURPOSES, { minLength: 1 })),
    now: fc.integer({ min: 0, max: 7 }).map(iso),
    clauses: sometimes(fc.array(clause, { minLength: 1, maxLength: 3 })),
    holds: fc.array(hold, { maxLength: 2 }),
  })
  .map(({ holds, ...f }): IndexFilter => ({
    ...defined(f),
    statuses: ['active'],
    exclude: {
      ids: holds.flatMap((h) => h.scope.recordIds ?? []),
      owners: holds.flatMap((h) => h.scope.subjects ?? []),
      projects: holds.flatMap((h) => h.scope.projects ?? []),
    },
  }));

const dag = fc.tuple(fc.array(root, { minLength: 1, maxLength: 6 }), fc.array(derivation, { minLength: 1, maxLength: 6 }));

describe('restrictions along lineage', () => {
  it('no caller sees a derived record that any restriction of any input or ancestor denies', () => {
    fc.assert(
      fc.property(dag, filter, ([roots, derivations], f) => {
        const { records, ancestors } = buildDag(roots, derivations);
        for (const [d, of] of ancestors.entries()) {
          if (!matchesFilter(records[d], f)) continue;
          for (const a of of)
            expect(matchesFilter(records[a], f), `${records[d].id} visible, its ancestor ${records[a].id} not`).toBe(true);
        }
      }),
      { numRuns: 3_000 },
    );
  });

  it('a hold on any input or ancestor covers the derived record (erasure, expiry and GET by id)', () => {
    fc.assert(
      fc.property(dag, fc.array(hold, { minLength: 1, maxLength: 2 }), ([roots, derivations], holds) => {
        const { records, ancestors } = buildDag(roots, derivations);
        for (const [d, of] of ancestors.entries()) {
          if ([...of].some((a) => isHeld(records[a], holds))) expect(isHeld(records[d], holds)).toBe(true);
        }
      }),
      { numRuns: 3_000 },
    );
  });

  it('the policy decision on a derived record is never more permissive than on its ancestors', () => {
    const subject = fc.record({
      user: fc.constantFrom(...OWNERS, 'agent-1'),
      roles: fc.subarray(['agent', 'legal', 'dpo']),
      clearance: fc.constantFrom(...Sensitivity.options),
    }) as fc.Arbitrary<PolicySubject>;
    fc.assert(
      fc.property(dag, subject, fc.constantFrom(...PURPOSES), ([roots, derivations], who, purpose) => {
        const { records, ancestors } = buildDag(roots, derivations);
        const allowed = (r: MemoryRecord) => evaluate(DEFAULT_POLICY, who, resourceOf(r), { purpose, now: iso(0) }, 'read').allowed;
        for (const [d, of] of ancestors.entries()) if (allowed(records[d])) for (const a of of) expect(allowed(records[a])).toBe(true);
      }),
      { numRuns: 3_000 },
    );
  });

  it('a hold placed after the derivation covers it at once: no re-derivation, the keys were kept when it was made', () => {
    const { records } = buildDag(
      [
        { owner: 'ann', sensitivity: 'internal', purposes: ['support'], project: undefined, expiresIn: undefined },
        { owner: 'ann', sensitivity: 'internal', purposes: ['support'], project: undefined, expiresIn: undefined },
      ],
      [
        { parents: [0, 1], owner: undefined },
        { parents: [2], owner: 'bob' },
      ],
    );
    const grandchild = records[3];
    expect(restrictionKeys(grandchild)).toEqual(
      expect.arrayContaining(['id:mem_ep_e0', 'id:e1', 'id:mem_cs_0', 'owner:ann', 'owner:bob', 'shared']),
    );
    const holdOn = (recordIds: string[]): LegalHold => ({
      id: 'h',
      reason: 'm',
      placedBy: 'legal',
      placedAt: iso(0),
      scope: { recordIds },
    });
    expect(isHeld(grandchild, [holdOn(['mem_ep_e0'])])).toBe(true);
    expect(isHeld(grandchild, [holdOn(['mem_ep_e9'])])).toBe(false);
    expect(withoutAncestry(grandchild).provenance).not.toHaveProperty('ancestry');
  });
});
