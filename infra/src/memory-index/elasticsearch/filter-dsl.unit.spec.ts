import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { matchesFilter, type IndexFilter, type MemoryRecord, type ReadClause } from '@elma/domain';
import { makeRecord } from '@elma/domain/testing';
import { compileFilter } from '../sqlite/filter-sql';
import { purposeSet } from '../sqlite/schema';
import { DAY, indexFilter, record } from '../arbitraries.testing';
import { evaluate } from './dsl-eval.testing';
import { bm25Query, compileFilterDsl, knnClause } from './filter-dsl';
import { MAPPING_VERSION, aliasName, indexName, memoryIndexMapping, toDocument, type MemoryDocument } from './mapping';

const VECTOR = Float32Array.from([0.1, 0.2, 0.3]);
const RUNS = 5_000;

const at = (iso: string) => Date.parse(iso);

/** A version that a later one replaced at `closedAt`: what `knownAsOf` queries reach. */
const historical = (r: MemoryRecord, closedAfter: number): MemoryDocument => {
  const doc = toDocument(r, VECTOR);
  return { ...doc, tx_to: doc.tx_from + closedAfter * DAY };
};

describe('the Elasticsearch filter target', () => {
  it('admits a current version exactly when the in-memory filter does and it was written by knownAsOf', () => {
    fc.assert(
      fc.property(record, indexFilter, (r, f) => {
        const compiled = compileFilterDsl(f);
        // The index keeps one row per version: a version written after knownAsOf was not known then,
        // which matchesFilter (a re-check of hits, by recordedAt) leaves to the index.
        const known = f.knownAsOf === undefined || toDocument(r, VECTOR).tx_from <= at(f.knownAsOf);
        const expected = matchesFilter(r, f) && known;
        if (compiled === undefined) expect(matchesFilter(r, f)).toBe(false);
        else expect(evaluate(compiled, toDocument(r, VECTOR))).toBe(expected);
      }),
      { numRuns: RUNS },
    );
  });

  it('admits a replaced version only to a knownAsOf query at which it was current', () => {
    fc.assert(
      fc.property(record, fc.integer({ min: 1, max: 4 }), indexFilter, (r, closedAfter, f) => {
        const compiled = compileFilterDsl(f);
        const doc = historical(r, closedAfter);
        const current = f.knownAsOf !== undefined && doc.tx_from <= at(f.knownAsOf) && doc.tx_to! > at(f.knownAsOf);
        if (compiled !== undefined) expect(evaluate(compiled, doc)).toBe(matchesFilter(r, f) && current);
      }),
      { numRuns: RUNS },
    );
  });

  it('denies without a query exactly where the SQLite target does', () => {
    fc.assert(
      fc.property(indexFilter, (f) => {
        expect(compileFilterDsl(f) === undefined).toBe(compileFilter(f) === undefined);
      }),
      { numRuns: RUNS },
    );
  });

  describe('against the SQLite target, row by row', () => {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE memories (
      id TEXT, kind TEXT, status TEXT, sensitivity_rank INTEGER, owner TEXT, project TEXT, retention_class TEXT,
      purpose_set TEXT, lineage_set TEXT, scope_set TEXT, valid_from INTEGER, valid_to INTEGER, expires_at INTEGER, tx_from INTEGER,
      tx_to INTEGER)`);
    afterAll(() => db.close());

    const sqliteAdmits = (doc: MemoryDocument, f: IndexFilter): boolean => {
      const sql = compileFilter(f);
      if (sql === undefined) return false;
      db.exec('DELETE FROM memories');
      db.prepare('INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').run(
        doc.id,
        doc.kind,
        doc.status,
        doc.sensitivity_rank,
        doc.owner,
        doc.project,
        doc.retention_class,
        purposeSet(doc.purposes),
        purposeSet(doc.lineage ?? []),
        purposeSet(doc.scope ?? []),
        doc.valid_from,
        doc.valid_to,
        doc.expires_at,
        doc.tx_from,
        doc.tx_to,
      );
      const { n } = db.prepare(`SELECT count(*) AS n FROM memories m WHERE ${sql.where}`).get(...sql.params) as { n: number };
      return n === 1;
    };

    it('admits the same current and replaced versions', () => {
      fc.assert(
        fc.property(record, fc.option(fc.integer({ min: 1, max: 4 })), indexFilter, (r, closedAfter, f) => {
          const doc = closedAfter === null ? toDocument(r, VECTOR) : historical(r, closedAfter);
          const compiled = compileFilterDsl(f);
          expect(compiled !== undefined && evaluate(compiled, doc)).toBe(sqliteAdmits(doc, f));
        }),
        { numRuns: RUNS },
      );
    });
  });

  it('never admits a record without a project through a project clause, nor withholds it by a project hold', () => {
    const plain = toDocument(makeRecord({ policy: { owner: 'ann' } }), VECTOR);
    const base: IndexFilter = { statuses: ['active'], maxSensitivity: 'restricted', now: '2025-01-01T00:00:00.000Z' };
    const eagle: ReadClause = { ruleId: 'project', maxSensitivity: 'restricted', project: 'eagle' };
    expect(evaluate(compileFilterDsl({ ...base, clauses: [eagle] })!, plain)).toBe(false);
    expect(evaluate(compileFilterDsl({ ...base, exclude: { projects: ['eagle'] } })!, plain)).toBe(true);
  });

  it('compiles an empty allow-list in a clause to a terms query that matches nothing', () => {
    const f: IndexFilter = {
      statuses: ['active'],
      maxSensitivity: 'restricted',
      now: '2025-01-01T00:00:00.000Z',
      clauses: [{ ruleId: 'r', maxSensitivity: 'restricted', kinds: [] }],
    };
    expect(compileFilterDsl(f)).toMatchObject({ bool: { should: [{ terms: { kind: [] } }], minimum_should_match: 1 } });
    expect(evaluate(compileFilterDsl(f)!, toDocument(makeRecord(), VECTOR))).toBe(false);
  });
});

describe('the Elasticsearch index layout', () => {
  it('names one index per tenant and mapping version behind one alias', () => {
    expect(indexName('acme', MAPPING_VERSION)).toBe(`elma-acme-memories-v${MAPPING_VERSION}`);
    expect(aliasName('acme')).toBe('elma-acme-memories');
    expect(() => indexName('acme,*', 1)).toThrow(RangeError);
    expect(() => aliasName('Acme')).toThrow(RangeError);
  });

  it('maps text for English and CJK analysis, the vector for cosine HNSW, and keeps the record unindexed', () => {
    const { settings, mappings } = memoryIndexMapping(384);
    expect(settings.index.number_of_shards).toBe(1);
    expect(mappings.dynamic).toBe('strict');
    expect(mappings._meta.mapping_version).toBe(MAPPING_VERSION);
    const p = mappings.properties;
    expect(p.text).toEqual({ type: 'text', analyzer: 'english', fields: { cjk: { type: 'text', analyzer: 'cjk' } } });
    expect(p.vector).toEqual({
      type: 'dense_vector',
      dims: 384,
      index: true,
      similarity: 'cosine',
      index_options: { type: 'hnsw', m: 16, ef_construction: 100 },
    });
    expect(p.record).toEqual({ type: 'object', enabled: false });
    for (const field of ['id', 'kind', 'status', 'owner', 'project', 'retention_class', 'purposes', 'fact_key'] as const)
      expect(p[field].type).toBe('keyword');
    for (const field of ['valid_from', 'valid_to', 'recorded_at', 'expires_at', 'tx_from', 'tx_to'] as const)
      expect(p[field]).toEqual({ type: 'date', format: 'epoch_millis' });
    expect([p.sensitivity_rank.type, p.version.type]).toEqual(['integer', 'integer']);
    expect(() => memoryIndexMapping(0)).toThrow(RangeError);
    expect(() => memoryIndexMapping(4097)).toThrow(RangeError);
  });

  it('stores a version with epoch-millisecond times, its transaction time, and every field the mapping names', () => {
    const r = makeRecord({
      version: 2,
      revisedAt: '2024-02-01T00:00:00+01:00',
      validTo: '2024-06-01T00:00:00.000Z',
      policy: { purposes: ['support', 'billing'], project: 'eagle' },
      retention: { expiresAt: '2025-01-01T00:00:00.000Z' },
      content: { text: 'ACME renews in March', fact: { entity: 'ACME', attribute: 'renewal month', value: 'March' } },
    });
    const doc = toDocument(r, VECTOR, 7);
    expect(doc).toMatchObject({
      tx_from: Date.parse('2024-01-31T23:00:00.000Z'),
      tx_to: null,
      recorded_at: Date.parse('2024-01-01T00:00:00.000Z'),
      valid_to: Date.parse('2024-06-01T00:00:00.000Z'),
      expires_at: Date.parse('2025-01-01T00:00:00.000Z'),
      purposes: ['support', 'billing'],
      project: 'eagle',
      fact_key: 'acme\u001frenewal month',
      sensitivity_rank: 1,
      version: 2,
      tokens: 7,
      record: r,
    });
    expect(doc.vector).toHaveLength(3);
    expect(doc.text).toContain('renewal month');
    const mapped = Object.keys(memoryIndexMapping(3).mappings.properties);
    expect(Object.keys(doc).filter((k) => !mapped.includes(k))).toEqual([]);
  });
});

describe('the hybrid search bodies', () => {
  const filter: IndexFilter = {
    statuses: ['active'],
    maxSensitivity: 'internal',
    now: '2025-01-01T00:00:00.000Z',
    clauses: [{ ruleId: 'own', maxSensitivity: 'internal', owner: 'ann' }],
  };

  it('scores BM25 over both analyses of the text, inside the compiled filter', () => {
    expect(bm25Query('merger plan 并购', filter)).toEqual({
      query: {
        bool: {
          must: [{ multi_match: { query: 'merger plan 并购', fields: ['text', 'text.cjk'], type: 'most_fields' } }],
          filter: [compileFilterDsl(filter)],
        },
      },
    });
  });

  it('pre-filters the kNN search with the same compiled filter', () => {
    expect(knnClause(VECTOR, 10, 100, filter)).toEqual({
      knn: { field: 'vector', query_vector: Array.from(VECTOR), k: 10, num_candidates: 100, filter: compileFilterDsl(filter) },
    });
    expect(() => knnClause(VECTOR, 10, 5, filter)).toThrow(RangeError);
  });

  it('asks nothing of the cluster when the policy admits nothing or there is no text', () => {
    expect(bm25Query('merger', { ...filter, clauses: [] })).toBeUndefined();
    expect(knnClause(VECTOR, 10, 100, { ...filter, statuses: [] })).toBeUndefined();
    expect(bm25Query('   ', filter)).toBeUndefined();
  });
});
