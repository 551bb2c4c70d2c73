import { describe, expect, it } from 'vitest';
import { makeRecord, type RecordOverrides } from '../testing';
import { factKey } from './conflicts';
import {
  decideProcedureVersion,
  entitiesNamedIn,
  entityKey,
  entityToken,
  indexKeyOf,
  latestProcedureVersions,
  procedureKey,
  visibleInSession,
  workingExpiry,
} from './kinds';
import { MemoryRecord, type Procedure } from './record';
import { structureIssues, WriteMemoryRequest } from './write';

const JAN = '2024-01-01T00:00:00.000Z';
const AT = '2024-07-01T12:00:00.000Z';

const procedural = (id: string, procedure: Partial<Procedure> & { version: number }, overrides: RecordOverrides = {}): MemoryRecord =>
  makeRecord({
    id,
    kind: 'procedural',
    content: {
      text: `refund approval v${procedure.version}`,
      procedure: { name: 'Refund approval', steps: ['check the order'], ...procedure },
    },
    recordedAt: JAN,
    ...overrides,
  });

describe('working memory', () => {
  it('expires its TTL after it was recorded, an hour unless told otherwise', () => {
    expect(workingExpiry(AT)).toBe('2024-07-01T13:00:00.000Z');
    expect(workingExpiry(AT, 90)).toBe('2024-07-01T12:01:30.000Z');
  });

  it('is visible only to a recall naming its own session; other kinds to every recall', () => {
    expect(visibleInSession({ kind: 'working', session: 's-1' }, 's-1')).toBe(true);
    expect(visibleInSession({ kind: 'working', session: 's-1' }, 's-2')).toBe(false);
    expect(visibleInSession({ kind: 'working', session: 's-1' }, undefined)).toBe(false);
    expect(visibleInSession({ kind: 'semantic' }, undefined)).toBe(true);
    expect(visibleInSession({ kind: 'semantic' }, 's-2')).toBe(true);
  });
});

describe('a write names what its kind needs', () => {
  const base = { content: { text: 'x' }, sourceEventIds: ['0b6f3a5e-7c1d-4a8e-9f00-123456789abc'] };
  const paths = (body: unknown) => {
    const result = WriteMemoryRequest.safeParse(body);
    return result.success ? [] : result.error.issues.map((i) => i.path.join('.'));
  };

  it('a procedural memory states a procedure with at least one step', () => {
    expect(paths({ ...base, kind: 'procedural' })).toEqual(['content.procedure']);
    expect(paths({ ...base, kind: 'procedural', content: { text: 'x', procedure: { name: 'p', version: 1, steps: [] } } })).toEqual([
      'content.procedure.steps',
    ]);
    expect(paths({ ...base, kind: 'procedural', content: { text: 'x', procedure: { name: 'p', version: 1, steps: ['a'] } } })).toEqual([]);
  });

  it('a relational memory states its edge, and no other kind states one', () => {
    const relation = { from: { type: 'person', id: 'li-wei' }, relation: 'approves', to: { type: 'project', id: 'apollo' } };
    expect(paths({ ...base, kind: 'relational' })).toEqual(['content.relation']);
    expect(paths({ ...base, kind: 'relational', content: { text: 'x', relation } })).toEqual([]);
    expect(paths({ ...base, kind: 'semantic', content: { text: 'x', relation } })).toEqual(['content.relation']);
    expect(
      structureIssues('episodic', { text: 'x', procedure: { name: 'p', version: 1, steps: ['a'] } }).map((i) => i.path.join('.')),
    ).toEqual(['content.procedure']);
  });

  it('a working memory may hold a procedure or an edge, for a promotion to keep', () => {
    const relation = { from: { type: 'person', id: 'li-wei' }, relation: 'approves', to: { type: 'project', id: 'apollo' } } as const;
    expect(paths({ ...base, kind: 'working', session: 's-1', content: { text: 'x', relation } })).toEqual([]);
    expect(structureIssues('relational', { text: 'x', relation })).toEqual([]);
    expect(structureIssues('semantic', { text: 'x', relation }).map((i) => i.path.join('.'))).toEqual(['content.relation']);
  });

  it('a working memory names its session, and only a working memory has one or a TTL', () => {
    expect(paths({ ...base, kind: 'working' })).toEqual(['session']);
    expect(paths({ ...base, kind: 'working', session: 's-1', ttlSeconds: 8 * 86_400 })).toEqual(['ttlSeconds']);
    expect(paths({ ...base, kind: 'working', session: 's-1', retention: 'long_term' })).toEqual(['retention']);
    expect(paths({ ...base, kind: 'semantic', session: 's-1', ttlSeconds: 60 })).toEqual(['session', 'ttlSeconds']);
  });
});

describe('procedure versions', () => {
  it('are one procedure however its name is written, and never share a key with a fact', () => {
    expect(procedureKey('  Refund   APPROVAL ')).toBe(procedureKey('refund approval'));
    expect(indexKeyOf(procedural('p1', { version: 1 }))).toBe(procedureKey('refund approval'));
    expect(procedureKey('procedure')).not.toBe(factKey({ entity: 'procedure', attribute: '' }));
    expect(indexKeyOf(makeRecord({ content: { text: 'x', fact: { entity: 'ACME', attribute: 'ceo', value: 'Li Wei' } } }))).toBe(
      factKey({ entity: 'ACME', attribute: 'ceo' }),
    );
    expect(indexKeyOf(makeRecord())).toBeNull();
  });

  it('a higher version supersedes the earlier one in force as a new version of its record', () => {
    const v1 = procedural('p1', { version: 1 });
    const decision = decideProcedureVersion(procedural('p2', { version: 2, name: 'refund  approval' }), [v1], AT);
    expect(decision).toEqual({
      kind: 'record',
      revisions: [
        {
          ...v1,
          status: 'superseded',
          version: 2,
          revisedAt: AT,
          resolution: { rule: 'procedure_version', against: ['p2'], decidedAt: AT },
        },
      ],
    });
    expect(MemoryRecord.safeParse((decision as { revisions: MemoryRecord[] }).revisions[0]).success).toBe(true);
  });

  it('leaves versions already superseded as they are', () => {
    const v1 = procedural('p1', { version: 1 }, { status: 'superseded', version: 2 });
    const v2 = procedural('p2', { version: 2 });
    expect(decideProcedureVersion(procedural('p3', { version: 3 }), [v1, v2], AT)).toMatchObject({
      kind: 'record',
      revisions: [{ id: 'p2', status: 'superseded', version: 2 }],
    });
  });

  it('refuses a version at or below the latest recorded, superseded or not', () => {
    const v1 = procedural('p1', { version: 1 }, { status: 'superseded', version: 2 });
    const v2 = procedural('p2', { version: 2 });
    expect(decideProcedureVersion(procedural('p1-again', { version: 1 }), [v1, v2], AT)).toEqual({
      kind: 'conflict',
      latest: { id: 'p2', version: 2 },
    });
    expect(decideProcedureVersion(procedural('p2-other', { version: 2 }), [v1, v2], AT)).toEqual({
      kind: 'conflict',
      latest: { id: 'p2', version: 2 },
    });
  });

  it('ignores its own record and other procedures', () => {
    const v2 = procedural('p2', { version: 2 });
    const other = procedural('o1', { version: 5, name: 'Onboarding' });
    expect(decideProcedureVersion(v2, [v2, other], AT)).toEqual({ kind: 'record', revisions: [] });
  });

  it('recall keeps only the highest version of each procedure among its candidates', () => {
    const items = [
      procedural('p1', { version: 1 }),
      procedural('p2', { version: 2 }),
      procedural('o1', { version: 1, name: 'Onboarding' }),
      makeRecord({ id: 'n' }),
    ].map((record) => ({ record }));
    expect(latestProcedureVersions(items).map((i) => i.record.id)).toEqual(['p2', 'o1', 'n']);
  });
});

describe('entities', () => {
  it('are the same entity whatever the case and spacing of the id, and one search word each', () => {
    expect(entityKey({ type: 'person', id: ' Li-Wei ' })).toBe('person:li-wei');
    expect(entityToken({ type: 'person', id: 'LI-WEI' })).toBe(entityToken({ type: 'person', id: 'li-wei' }));
    expect(entityToken({ type: 'person', id: 'li-wei' })).not.toBe(entityToken({ type: 'team', id: 'li-wei' }));
    expect(entityToken({ type: 'project', id: 'apollo' })).toMatch(/^ent[0-9a-f]{16}$/);
  });

  it('are named by both ends of an edge, or by a fact about an entity key', () => {
    const edge = makeRecord({
      kind: 'relational',
      content: {
        text: 'x',
        relation: { from: { type: 'person', id: 'li-wei' }, relation: 'approves', to: { type: 'project', id: 'apollo' } },
      },
    });
    expect(entitiesNamedIn(edge)).toEqual([
      { type: 'person', id: 'li-wei' },
      { type: 'project', id: 'apollo' },
    ]);
    const aboutKey = makeRecord({ content: { text: 'x', fact: { entity: 'Customer:C-1042', attribute: 'tier', value: 'gold' } } });
    expect(entitiesNamedIn(aboutKey)).toEqual([{ type: 'customer', id: 'C-1042' }]);
    expect(entitiesNamedIn(makeRecord({ content: { text: 'x', fact: { entity: 'ACME', attribute: 'tier', value: 'gold' } } }))).toEqual([]);
    expect(entitiesNamedIn(makeRecord({ content: { text: 'x', fact: { entity: 'planet:mars', attribute: 'a', value: 'b' } } }))).toEqual(
      [],
    );
  });
});
