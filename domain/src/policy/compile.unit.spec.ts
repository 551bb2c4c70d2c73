import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchesFilter } from '../memory-index/filter';
import { MemoryKind, MemoryStatus, RetentionClass, Sensitivity, type MemoryRecord } from '../memory/record';
import { admittingClause, compileRead, matchesClauses } from './compile';
import { evaluate } from './evaluate';
import { makeRecord } from '../testing';
import { Operation, PolicyRule, resourceOf, type PolicyEnv, type PolicySubject } from './policy';

const ROLES = ['agent', 'admin', 'dpo', 'legal', 'auditor'];
const PURPOSES = ['support', 'billing', 'hr'];
const CHANNELS = ['api', 'chat'];
const USERS = ['u1', 'u2', 'u3'];
const PROJECTS = ['p1', 'p2'];
const NOW = '2025-01-01T00:00:00.000Z';

const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

/** Mostly absent, so that random rules are not all too narrow to allow anything. */
const sometimes = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: arb, weight: 1 });
/** Mostly non-empty; an empty list (a rule that admits nothing) now and then. */
const someOf = <T>(values: readonly T[]) =>
  fc.oneof({ arbitrary: fc.subarray([...values], { minLength: 1 }), weight: 9 }, { arbitrary: fc.constant<T[]>([]), weight: 1 });
const withoutUndefined = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const condition = fc
  .record({
    roles: sometimes(someOf(ROLES)),
    purposes: sometimes(someOf(PURPOSES)),
    channels: sometimes(someOf(CHANNELS)),
    kinds: sometimes(someOf(MemoryKind.options)),
    maxSensitivity: sometimes(fc.constantFrom(...Sensitivity.options)),
    ownerIsSubject: sometimes(fc.boolean()),
    sameProject: sometimes(fc.boolean()),
    statuses: sometimes(someOf(MemoryStatus.options)),
    retentionClasses: sometimes(someOf(RetentionClass.options)),
    crossPurpose: sometimes(fc.boolean()),
  })
  .map(withoutUndefined);

const operations = fc.oneof(
  { arbitrary: fc.constant(['read' as const]), weight: 3 },
  { arbitrary: fc.subarray(Operation.options, { minLength: 1 }), weight: 1 },
);

const rules = fc
  .array(fc.record({ operations, when: condition }), { maxLength: 6 })
  .map((rs) => rs.map((r, i) => PolicyRule.parse({ id: `rule-${i}`, ...r })));

const subject: fc.Arbitrary<PolicySubject> = fc.record(
  {
    user: fc.constantFrom(...USERS),
    roles: fc.subarray(ROLES),
    project: fc.constantFrom(...PROJECTS),
    clearance: fc.constantFrom(...Sensitivity.options),
  },
  { requiredKeys: ['user', 'roles', 'clearance'] },
);

const env: fc.Arbitrary<PolicyEnv> = fc
  .record({
    purpose: fc.option(fc.constantFrom(...PURPOSES), { nil: undefined, freq: 6 }),
    channel: optional(fc.constantFrom(...CHANNELS)),
  })
  .map(({ purpose, channel }) => ({ now: NOW, ...(purpose && { purpose }), ...(channel && { channel }) }));

const record: fc.Arbitrary<MemoryRecord> = fc
  .record({
    id: fc.constantFrom('m1', 'm2', 'm3'),
    kind: fc.constantFrom(...MemoryKind.options),
    status: fc.constantFrom(...MemoryStatus.options),
    sensitivity: fc.constantFrom(...Sensitivity.options),
    owner: fc.constantFrom(...USERS),
    project: optional(fc.constantFrom(...PROJECTS)),
    retentionClass: fc.constantFrom(...RetentionClass.options),
    purposes: someOf(PURPOSES),
    // Derived from records of these owners too (co-owned when another than its own is among them).
    upstreamOwners: optional(fc.subarray(USERS, { maxLength: 2 })),
  })
  .map((r) =>
    makeRecord({
      ...(r.upstreamOwners && {
        provenance: {
          sourceEventIds: [],
          parentIds: [],
          rule: 'test',
          ruleVersion: '1',
          ancestry: { ids: [], owners: r.upstreamOwners, projects: [], expiresAt: null },
        },
      }),
      id: r.id,
      kind: r.kind,
      status: r.status,
      policy: { owner: r.owner, roles: [], purposes: r.purposes, sensitivity: r.sensitivity, ...(r.project && { project: r.project }) },
      retention: { class: r.retentionClass, expiresAt: null },
    }),
  );

describe('a read policy compiled to index clauses', () => {
  it('admits exactly the records the policy allows, naming the same rule', () => {
    fc.assert(
      fc.property(rules, subject, env, record, (rs, s, e, r) => {
        const policy = { rules: rs };
        const decision = evaluate(policy, s, resourceOf(r), e, 'read');
        const clauses = compileRead(policy, s, e);
        expect(matchesClauses(r, clauses)).toBe(decision.allowed);
        expect(admittingClause(r, clauses)?.ruleId ?? 'default-deny').toBe(decision.ruleId);
      }),
      { numRuns: 2000 },
    );
  });

  it('never admits a record above the caller’s clearance, whatever the rules', () => {
    fc.assert(
      fc.property(rules, subject, env, record, (rs, s, e, _r) => {
        for (const clause of compileRead({ rules: rs }, s, e)) {
          expect(Sensitivity.options.indexOf(clause.maxSensitivity)).toBeLessThanOrEqual(Sensitivity.options.indexOf(s.clearance));
        }
      }),
    );
  });

  it('lets the index filter apply the clauses and the exclusions', () => {
    fc.assert(
      fc.property(
        rules,
        subject,
        env,
        record,
        fc.subarray(USERS),
        fc.subarray(PROJECTS),
        fc.subarray(['m1', 'm2']),
        (rs, s, e, r, owners, projects, ids) => {
          const clauses = compileRead({ rules: rs }, s, e);
          const exclude = { owners, projects, ids };
          const filter = { statuses: MemoryStatus.options, maxSensitivity: 'restricted' as const, now: NOW, clauses, exclude };
          // A hold on the record's owner or subject, or on an owner it derives from, withholds it too.
          const heldOwner = [r.policy.owner, r.subject, ...(r.provenance.ancestry?.owners ?? [])].some((o) => owners.includes(o));
          const withheld = heldOwner || ids.includes(r.id) || (r.policy.project !== undefined && projects.includes(r.policy.project));
          expect(matchesFilter(r, filter)).toBe(!withheld && matchesClauses(r, clauses));
          expect(matchesClauses(r, clauses, exclude)).toBe(!withheld && matchesClauses(r, clauses));
        },
      ),
    );
  });

  it('admits nothing when no clause is given (default deny)', () => {
    fc.assert(
      fc.property(record, (r) => {
        expect(matchesClauses(r, [])).toBe(false);
      }),
    );
  });
});
