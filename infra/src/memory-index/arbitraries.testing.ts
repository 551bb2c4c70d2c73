import fc from 'fast-check';
import {
  MemoryKind,
  MemoryStatus,
  RetentionClass,
  Sensitivity,
  type Ancestry,
  type IndexFilter,
  type IndexScope,
  type MemoryContent,
  type MemoryRecord,
  type SourceRef,
  type ReadClause,
  type ReadExclusions,
} from '@elma/domain';
import { makeRecord } from './fixtures';

/** Property-test vocabularies shared by the index contract and the filter compilers' specs. */
export const OWNERS = ['ann', 'bob', 'cy'];
export const PROJECTS = ['falcon', 'eagle'];
export const PURPOSES = ['support', 'billing', 'hr'];
/** What a scope names: sessions, entities, source systems and channels (subjects and projects are OWNERS and PROJECTS). */
export const SESSIONS = ['chat-1', 'chat-2'];
export const ENTITIES = ['acme', '陈女士'];
export const SYSTEMS = ['crm', 'mail'];
export const CHANNELS = ['email', 'web'];

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
      sessions: sometimes(fc.subarray(SESSIONS)),
      expiresAt: fc.constant(null),
    }),
  ).map((a) => a && defined(a));

/** A record's sources: none (absent), or one or two systems, each with or without a channel. */
export const sources: fc.Arbitrary<SourceRef[] | undefined> = sometimes(
  fc.array(fc.record({ system: fc.constantFrom(...SYSTEMS), channel: sometimes(fc.constantFrom(...CHANNELS)) }).map(defined), {
    minLength: 1,
    maxLength: 2,
  }),
);

/** A record's content: plain text, a fact about an entity, or a relation between two. */
export const scopedContent = (text: string): fc.Arbitrary<MemoryContent> =>
  fc.oneof(
    fc.constant({ text }),
    fc.constantFrom(...ENTITIES).map((entity) => ({ text, fact: { entity, attribute: 'address', value: 'Shanghai' } })),
    fc.tuple(fc.constantFrom(...ENTITIES), fc.constantFrom(...ENTITIES, 'zed')).map(([from, to]) => ({
      text,
      relation: { from: { type: 'customer' as const, id: from }, relation: 'knows', to: { type: 'person' as const, id: to } },
    })),
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

/** Records and index filters over every filter attribute, for the filter compilers' row-by-row specs. */
export const DAY = 86_400_000;
const BASE = Date.parse('2024-01-01T00:00:00.000Z');
/** Ids of the records and filters below: few, so versions of one id and holds on it meet often. */
export const IDS = ['r-0', 'r-1', 'r-2', 'r-3'];
/** Instants on a coarse grid, so records and filters often meet exactly at a boundary. */
const day = fc.integer({ min: 0, max: 8 }).map((d) => BASE + d * DAY);
/** Either offset spelling of the same instant: every target compares instants, not strings. */
const iso = day.chain((ms) => fc.boolean().map((utc) => (utc ? new Date(ms).toISOString() : withOffset(ms))));
const withOffset = (ms: number) => `${new Date(ms + 2 * 3_600_000).toISOString().slice(0, 19)}+02:00`;

const orNull = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(null), weight: 2 }, { arbitrary: arb, weight: 1 });
/** Now and then empty: an empty list is a case of its own (default deny). */
const listOf = <T>(values: readonly T[]) =>
  fc.oneof({ arbitrary: fc.subarray([...values], { minLength: 1 }), weight: 6 }, { arbitrary: fc.constant<T[]>([]), weight: 1 });

export const record: fc.Arbitrary<MemoryRecord> = fc
  .record({
    id: fc.constantFrom(...IDS),
    kind: fc.constantFrom(...MemoryKind.options),
    status: fc.constantFrom(...MemoryStatus.options),
    sensitivity: fc.constantFrom(...Sensitivity.options),
    owner: fc.constantFrom(...OWNERS),
    project: sometimes(fc.constantFrom(...PROJECTS)),
    retention: fc.constantFrom(...RetentionClass.options),
    purposes: listOf(PURPOSES),
    validFrom: iso,
    validTo: orNull(iso),
    recordedAt: iso,
    revisedAfter: orNull(fc.integer({ min: 0, max: 4 })),
    expiresAt: orNull(iso),
    parentIds: fc.subarray(IDS, { maxLength: 2 }),
    ancestry: ancestry(IDS),
    subject: fc.constantFrom(...OWNERS),
    session: sometimes(fc.constantFrom(...SESSIONS)),
    sources,
    content: scopedContent('The customer prefers email.'),
  })
  .map((r) =>
    makeRecord({
      id: r.id,
      subject: r.subject,
      content: r.content,
      ...(r.session !== undefined ? { session: r.session } : {}),
      ...(r.sources !== undefined ? { sources: r.sources } : {}),
      kind: r.kind,
      status: r.status,
      validFrom: r.validFrom,
      validTo: r.validTo,
      recordedAt: r.recordedAt,
      // A later version: revised some days after it was first recorded.
      ...(r.revisedAfter !== null
        ? { version: 2 + r.revisedAfter, revisedAt: new Date(Date.parse(r.recordedAt) + r.revisedAfter * DAY).toISOString() }
        : {}),
      policy: defined({ owner: r.owner, roles: [], purposes: r.purposes, sensitivity: r.sensitivity, project: r.project }),
      retention: { class: r.retention, expiresAt: r.expiresAt },
      provenance: {
        sourceEventIds: ['evt-1'],
        parentIds: r.parentIds,
        ...(r.ancestry ? { ancestry: r.ancestry } : {}),
        rule: 'test',
        ruleVersion: '1',
      },
    }),
  );

const clause: fc.Arbitrary<ReadClause> = readClause(listOf);

/** A caller's scope over the vocabularies above, each key now and then naming a value no record has. */
export const indexScope: fc.Arbitrary<IndexScope> = fc
  .record({
    subjects: sometimes(listOf([...OWNERS, 'zed'])),
    entities: sometimes(listOf([...ENTITIES, 'zed'])),
    projects: sometimes(listOf([...PROJECTS, 'owl'])),
    sessions: sometimes(listOf([...SESSIONS, 'chat-9'])),
    sources: sometimes(
      fc.array(
        fc
          .record({ system: sometimes(fc.constantFrom(...SYSTEMS, 'fax')), channel: sometimes(fc.constantFrom(...CHANNELS)) })
          .map(defined)
          .filter((source) => source.system !== undefined || source.channel !== undefined),
        { maxLength: 2 },
      ),
    ),
    occurredAfter: sometimes(iso),
    occurredBefore: sometimes(iso),
  })
  .map(defined);

const exclusions: fc.Arbitrary<ReadExclusions> = fc
  .record({ owners: sometimes(listOf(OWNERS)), projects: sometimes(listOf(PROJECTS)), ids: sometimes(listOf(IDS)) })
  .map(defined);

export const indexFilter: fc.Arbitrary<IndexFilter> = fc
  .record({
    statuses: fc.oneof(listOf(MemoryStatus.options), fc.constant(MemoryStatus.options), fc.constant(MemoryStatus.options)),
    kinds: sometimes(listOf(MemoryKind.options)),
    maxSensitivity: fc.constantFrom<Sensitivity>('internal', 'confidential', 'restricted', 'restricted'),
    purposes: sometimes(listOf(PURPOSES)),
    asOf: sometimes(iso),
    knownAsOf: sometimes(iso),
    now: iso,
    clauses: fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 1 },
      { arbitrary: fc.constant<ReadClause[]>([]), weight: 1 },
      { arbitrary: fc.array(clause, { minLength: 1, maxLength: 4 }), weight: 4 },
    ),
    exclude: sometimes(exclusions),
    scope: sometimes(indexScope),
  })
  .map(defined);
