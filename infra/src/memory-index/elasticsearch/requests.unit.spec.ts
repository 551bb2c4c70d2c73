import { describe, expect, it } from 'vitest';
import { RRF_K, type HybridQuery, type IndexedMemory, type IndexFilter } from '@elma/domain';
import { makeRecord, type RecordOverrides } from '@elma/domain/testing';
import { evaluate } from './dsl-eval.testing';
import { compileFilterDsl } from './filter-dsl';
import {
  aliasName,
  aliasPattern,
  indexName,
  memoryIndexMapping,
  reindexName,
  tenantOfAlias,
  toDocument,
  usageAliasName,
  type MemoryDocument,
} from './mapping';
import {
  aliasSwapActions,
  bm25Text,
  bulkFailures,
  checkServerVersion,
  chunkOperations,
  dropsSourceVectors,
  fuse,
  knnCosine,
  leasesPast,
  lastCommitsCovered,
  lineageEntryOf,
  lineageMatches,
  lineageOfQuery,
  maxSeqNos,
  planUpsert,
  routeBodies,
  serverRrfBody,
  usageConflicts,
  usageDocId,
  usageOperations,
  vectorOf,
  versionDocId,
  withUsage,
  type BulkItem,
  type ShardStats,
  type BulkOperation,
  type StoredVersion,
} from './requests';

const VECTOR = Float32Array.from([0.1, 0.2, 0.3]);
const mem = (overrides: RecordOverrides): IndexedMemory => ({ record: makeRecord({ tenant: 't', ...overrides }), vector: VECTOR });
const stored = (id: string, version: number, txFrom: number, txTo: number | null = null): StoredVersion => ({
  _id: versionDocId(id, version),
  id,
  version,
  tx_from: txFrom,
  tx_to: txTo,
});

function plan(existing: StoredVersion[], memories: IndexedMemory[]) {
  let seq = 100;
  return planUpsert(existing, memories, { nextSeq: () => ++seq, countTokens: (text) => text.length });
}

/** The bulk body as [action, _id, body] triples, for readable expectations. */
const actions = (ops: BulkOperation[]) => {
  const out: [string, string, object][] = [];
  for (let i = 0; i < ops.length; i += 2) {
    const [action, meta] = Object.entries(ops[i])[0] as [string, { _id: string }];
    out.push([action, meta._id, ops[i + 1]]);
  }
  return out;
};

const at = (iso: string) => Date.parse(iso);

describe('planning an upsert against the stored versions', () => {
  it('writes a new record as its current version, with tokens and an insertion sequence', () => {
    const { operations } = plan([], [mem({ id: 'a', text: 'hello' })]);
    expect(actions(operations)).toEqual([
      ['index', 'a#v1', expect.objectContaining({ id: 'a', version: 1, tx_to: null, tokens: 5, seq: 101 })],
    ]);
  });

  it('replaces the same version in place, without closing anything', () => {
    const { operations } = plan([stored('a', 1, 10)], [mem({ id: 'a', text: 'again' })]);
    expect(actions(operations).map(([a, id]) => [a, id])).toEqual([['index', 'a#v1']]);
  });

  it('closes the current version at the transaction time of a higher one, before writing it', () => {
    const v2 = mem({ id: 'a', version: 2, revisedAt: '2026-06-01T00:00:00.000Z' });
    const { operations } = plan([stored('a', 1, 10)], [v2]);
    expect(actions(operations)).toEqual([
      ['update', 'a#v1', { doc: { tx_to: at('2026-06-01T00:00:00.000Z') } }],
      ['index', 'a#v2', expect.objectContaining({ version: 2, tx_to: null })],
    ]);
  });

  it('ignores a version lower than the current one, or not above one already stored', () => {
    expect(plan([stored('a', 1, 10, 20), stored('a', 2, 20)], [mem({ id: 'a', version: 1 })]).operations).toEqual([]);
    expect(plan([stored('a', 2, 20, 30)], [mem({ id: 'a', version: 2 })]).operations).toEqual([]);
  });

  it('applies several versions of one id in call order: the earlier becomes history inside the same request', () => {
    const v1 = mem({ id: 'a', recordedAt: '2026-01-01T00:00:00.000Z' });
    const v2 = mem({ id: 'a', version: 2, recordedAt: '2026-01-01T00:00:00.000Z', revisedAt: '2026-02-01T00:00:00.000Z' });
    const { operations } = plan([], [v1, v2, v1]);
    expect(actions(operations)).toEqual([
      ['index', 'a#v1', expect.objectContaining({ tx_to: at('2026-02-01T00:00:00.000Z') })],
      ['index', 'a#v2', expect.objectContaining({ tx_to: null })],
    ]);
  });

  it('moves a record written again in the same call to the end of the insertion order', () => {
    const { operations } = plan([], [mem({ id: 'a' }), mem({ id: 'b' }), mem({ id: 'a' })]);
    expect(actions(operations).map(([, , doc]) => (doc as MemoryDocument).id)).toEqual(['b', 'a']);
    expect(actions(operations).map(([, , doc]) => (doc as MemoryDocument).seq)).toEqual([102, 103]);
  });

  it('repairs two current versions left by a failed write, closing the lower at the higher one’s time', () => {
    const { operations } = plan([stored('a', 1, 10), stored('a', 2, 20)], [mem({ id: 'a', version: 2 })]);
    expect(actions(operations).map(([a, id, body]) => [a, id, a === 'update' ? body : undefined])).toEqual([
      ['update', 'a#v1', { doc: { tx_to: 20 } }],
      ['index', 'a#v2', undefined],
    ]);
  });

  it('names a version’s document by id and version, hashing an id too long for Elasticsearch', () => {
    expect(versionDocId('m-1', 3)).toBe('m-1#v3');
    const long = 'x'.repeat(600);
    expect(versionDocId(long, 1)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(versionDocId(long, 2)).not.toBe(versionDocId(long, 1));
    expect(usageDocId(long)).toMatch(/^sha256:/);
  });

  it('splits a bulk body between actions, never between an action and its source', () => {
    const ops = plan(
      [],
      ['a', 'b', 'c'].map((id) => mem({ id })),
    ).operations;
    expect(chunkOperations(ops, 2).map((c) => c.length)).toEqual([4, 2]);
  });
});

describe('documents and their failures', () => {
  it('stores a zero vector without the field (a cosine field refuses it) and gives it back as zeros', () => {
    const doc = toDocument(makeRecord(), new Float32Array(3));
    expect(doc).not.toHaveProperty('vector');
    expect(Array.from(vectorOf(doc, 3))).toEqual([0, 0, 0]);
    expect(Array.from(vectorOf(toDocument(makeRecord(), VECTOR), 3))).toEqual(Array.from(VECTOR));
  });

  it('describes bulk failures by id and error type, never by Elasticsearch’s reason', () => {
    const items = [
      { index: { _id: 'a#v1', status: 201 } },
      { index: { _id: 'b#v1', status: 400, error: { type: 'document_parsing_exception', reason: 'preview of field value: secret text' } } },
    ];
    const failures = bulkFailures(items);
    expect(failures).toEqual(['index b#v1: document_parsing_exception (400)']);
    expect(failures.join()).not.toContain('secret');
  });

  it('lists lineage from the stored fields, without content', () => {
    const r = makeRecord({ id: 'l-1', policy: { project: 'apollo' }, retention: { expiresAt: '2030-01-01T00:00:00.000Z' } });
    const doc = toDocument(r, VECTOR);
    expect(lineageEntryOf({ ...doc, kind: r.kind, record: { subject: r.subject, provenance: r.provenance } })).toEqual({
      id: 'l-1',
      kind: r.kind,
      subject: r.subject,
      owner: r.policy.owner,
      rule: r.provenance.rule,
      sourceEventIds: r.provenance.sourceEventIds,
      parentIds: r.provenance.parentIds,
      recordedAt: new Date(r.recordedAt).toISOString(),
      expiresAt: '2030-01-01T00:00:00.000Z',
      project: 'apollo',
      // The model that made the vector is part of the record's lineage.
      vectorModel: 'unnamed',
    });
  });
});

describe('the hybrid search requests', () => {
  const filter: IndexFilter = {
    statuses: ['active'],
    maxSensitivity: 'internal',
    now: '2025-01-01T00:00:00.000Z',
    clauses: [{ ruleId: 'own', maxSensitivity: 'internal', owner: 'ann' }],
  };
  const q = (over: Partial<HybridQuery> = {}): HybridQuery => ({
    tenant: 't',
    text: 'merger plan 并购',
    vector: VECTOR,
    limit: 5,
    filter,
    ...over,
  });

  it('carries the compiled policy filter in both routes, kNN as a pre-filter', () => {
    const { bm25, knn } = routeBodies(q()) as {
      bm25: { query: { bool: { filter: unknown[] } }; size: number };
      knn: { knn: { filter: unknown; k: number; num_candidates: number }; size: number };
    };
    expect(bm25.query.bool.filter).toEqual([compileFilterDsl(filter)]);
    expect(knn.knn.filter).toEqual(compileFilterDsl(filter));
    expect([bm25.size, knn.size, knn.knn.k]).toEqual([20, 20, 20]);
    expect(knn.knn.num_candidates).toBeGreaterThanOrEqual(knn.knn.k);
  });

  it('asks no route that has nothing to do', () => {
    expect(routeBodies(q({ text: '  ' }))).not.toHaveProperty('bm25');
    expect(routeBodies(q({ vector: undefined }))).not.toHaveProperty('knn');
    expect(routeBodies(q({ vector: new Float32Array(3) }))).not.toHaveProperty('knn');
    expect(routeBodies(q({ filter: { ...filter, clauses: [] } }))).toEqual({});
  });

  it('asks BM25 for the words of the query without English or Chinese stop words, Chinese words written together', () => {
    expect(bm25Text('What did Caroline paint in May?')).toBe('caroline paint may');
    expect(bm25Text('我们的交付风险是什么？')).toBe('交付风险');
    expect(bm25Text('卡罗琳什么时候去露营 in 2023')).toBe('卡罗琳去露营 2023');
    expect(bm25Text('what is it')).toBe('what is it');
    const { bm25 } = routeBodies(q({ text: 'What is the merger plan?' })) as { bm25: { query: { bool: { must: object[] } } } };
    expect(JSON.stringify(bm25.query.bool.must)).toContain('"query":"merger plan"');
  });

  it('fuses on the server only when both routes run, with ELMA’s rank constant and window', () => {
    expect(serverRrfBody(q())).toMatchObject({ retriever: { rrf: { rank_constant: RRF_K, rank_window_size: 20 } }, size: 5 });
    expect(serverRrfBody(q({ text: '' }))).toBeUndefined();
  });

  it('fuses the routes by reciprocal rank and keeps each hit’s rank in each route', () => {
    const hit = (id: string, score = 1) => ({ _id: `${id}#v1`, id, score });
    const fused = fuse([hit('a', 7), hit('b', 3)], [hit('b'), hit('c')], 2);
    expect(fused).toEqual([
      {
        _id: 'b#v1',
        id: 'b',
        score: 1 / (RRF_K + 2) + 1 / (RRF_K + 1),
        bm25Rank: 2,
        bm25Score: 3,
        vectorRank: 1,
        contributions: { bm25: 1 / (RRF_K + 2), dense: 1 / (RRF_K + 1) },
      },
      { _id: 'a#v1', id: 'a', score: 1 / (RRF_K + 1), bm25Rank: 1, bm25Score: 7, contributions: { bm25: 1 / (RRF_K + 1) } },
    ]);
    expect(fuse([hit('a')], [], 0)).toEqual([]);
  });

  it('fuses by normalised score when asked, a kNN hit below the floor adding nothing', () => {
    const hit = (id: string, score: number) => ({ _id: `${id}#v1`, id, score });
    const fusion = { method: 'normalised' as const, weights: { bm25: 0.5, dense: 0.5 }, denseFloor: 0.5 };
    const fused = fuse([hit('a', 10), hit('b', 8), hit('e', 0)], [hit('b', 0.9), hit('c', 0.7), hit('d', 0.3)], 10, fusion);
    // Few candidates: BM25 scaled from 0 (a 1, b 0.8, e 0), kNN from the floor 0.5 (b 1, c 0.5; d under it).
    expect(fused.map((f) => [f.id, f.score])).toEqual([
      ['b', 0.9],
      ['a', 0.5],
      ['c', expect.closeTo(0.25, 10)],
      ['e', 0],
    ]);
    expect(knnCosine(0.75)).toBeCloseTo(0.5);
  });

  it('fuses each kind of writing on its own when the hits carry their text, as the SQLite target does', () => {
    const fusion = { method: 'normalised' as const, weights: { bm25: 0.5, dense: 0.5 }, denseFloor: 0.75 };
    // English hits above the floor, the Chinese answer below it but standing out among the Chinese.
    const english = Array.from({ length: 12 }, (_, i) => ({
      _id: `en${i}#v1`,
      id: `en${i}`,
      score: 0.85 - i * 0.005,
      text: 'Mr Zhao orders braised pork on Fridays.',
    }));
    const chinese = Array.from({ length: 12 }, (_, i) => ({
      _id: `zh${i}#v1`,
      id: `zh${i}`,
      score: i === 0 ? 0.72 : 0.66 - i * 0.005,
      text: '赵先生对花生过敏。',
    }));
    const knn = [...english, ...chinese];
    expect(fuse([], knn, 3, fusion).map((f) => f.id)).toContain('zh0');
    // Without the text, the route's hits fuse as before: the Chinese answer stays under the floor.
    expect(
      fuse(
        [],
        knn.map(({ text: _text, ...hit }) => hit),
        30,
        fusion,
      ).map((f) => f.id),
    ).not.toContain('zh0');
  });
});

describe('usage beside the records', () => {
  it('counts each id once per call: a first use creates the counts, a later one rewrites them guarded by what was read', () => {
    const stored = new Map([['b', { doc: { id: 'b', retrieved: 3, adopted: 0, last_used_at: 9 }, seqNo: 7, primaryTerm: 1 }]]);
    const ops = usageOperations(['a', 'a', 'b'], 'adopted', 5, stored);
    expect(ops).toEqual([
      { create: { _id: 'a' } },
      { id: 'a', retrieved: 0, adopted: 1, last_used_at: 5 },
      { index: { _id: 'b', if_seq_no: 7, if_primary_term: 1 } },
      { id: 'b', retrieved: 3, adopted: 1, last_used_at: 9 },
    ]);
  });

  it('retries only the ids that lost a race, and reports any other failure by type', () => {
    const items: BulkItem[] = [
      { create: { _id: 'a', status: 409, error: { type: 'version_conflict_engine_exception' } } },
      { index: { _id: 'b', status: 200 } },
      { index: { _id: 'c', status: 429, error: { type: 'es_rejected_execution_exception' } } },
    ];
    expect(usageConflicts(items, ['a', 'b', 'c'])).toEqual({
      conflicts: ['a'],
      failures: ['index c: es_rejected_execution_exception (429)'],
    });
  });

  it('adds the counts to those the record was written with', () => {
    const r = makeRecord();
    expect(withUsage(r, undefined)).toBe(r);
    expect(withUsage(r, { id: r.id, retrieved: 2, adopted: 1, last_used_at: Date.parse('2026-12-01T12:00:00.000Z') }).usage).toEqual({
      retrieved: r.usage.retrieved + 2,
      adopted: r.usage.adopted + 1,
      lastUsedAt: '2026-12-01T12:00:00.000Z',
    });
  });
});

describe('names, aliases and servers', () => {
  it('allows hyphens inside tenant ids, never wildcards, commas, upper case or a leading - or _', () => {
    expect(aliasName('tenant-a')).toBe('elma-tenant-a-memories');
    for (const bad of ['a*', 'a,b', 'Acme', '-a', '_a', '', 'a b']) expect(() => aliasName(bad)).toThrow(RangeError);
  });

  it('puts every name under the namespace, which has no hyphen so one namespace’s wildcard never reaches another', () => {
    expect(indexName('tenant-a', 1, 'test1')).toBe('test1-tenant-a-memories-v1');
    expect(reindexName('tenant-a', 1, '123', 'test1')).toBe('test1-tenant-a-memories-v1-r123');
    expect(usageAliasName('tenant-a', 'test1')).toBe('test1-tenant-a-usage');
    expect(aliasPattern('test1')).toBe('test1-*-memories');
    expect(() => aliasName('a', 'el-ma')).toThrow(RangeError);
  });

  it('reads the tenant back from its alias, however many hyphens it holds', () => {
    expect(tenantOfAlias(aliasName('a-memories-b', 'ns'), 'ns')).toBe('a-memories-b');
    expect(tenantOfAlias('ns-tenant-a-usage', 'ns')).toBeUndefined();
    expect(tenantOfAlias('other-tenant-a-memories', 'ns')).toBeUndefined();
  });

  it('moves the alias with one atomic action list, removing it from the old indices', () => {
    expect(aliasSwapActions('al', ['old'], 'new')).toEqual([
      { remove: { indices: ['old'], alias: 'al' } },
      { add: { index: 'new', alias: 'al', is_write_index: true } },
    ]);
    expect(aliasSwapActions('al', [], 'new')).toEqual([{ add: { index: 'new', alias: 'al', is_write_index: true } }]);
  });

  it('lets a merge expunge the purge only once every retention lease has moved past its deletes', () => {
    const stats = (leases: number[]) => ({
      indices: {
        idx: {
          shards: {
            '0': [
              {
                routing: { primary: true },
                seq_no: { max_seq_no: 41 },
                retention_leases: { leases: leases.map((n) => ({ retaining_seq_no: n })) },
              },
              { routing: { primary: false }, seq_no: { max_seq_no: 40 } },
            ],
          },
        },
      },
    });
    const marks = maxSeqNos(stats([]));
    expect(marks).toEqual(new Map([['idx/0', 41]]));
    expect(leasesPast(stats([30]), marks)).toBe(false);
    expect(leasesPast(stats([41]), marks)).toBe(false);
    expect(leasesPast(stats([42, 50]), marks)).toBe(true);
  });

  it("lets the last flush of a purge go only once each copy's global checkpoint covers its last commit", () => {
    const stats = (...copies: [globalCheckpoint: number, committedMax: number][]): ShardStats => ({
      indices: {
        idx: {
          shards: {
            '0': copies.map(([global_checkpoint, max]) => ({
              seq_no: { global_checkpoint },
              commit: { user_data: { max_seq_no: String(max) } },
            })),
          },
        },
      },
    });
    expect(lastCommitsCovered(stats([-1, -1]))).toBe(true);
    expect(lastCommitsCovered(stats([12, 12]))).toBe(true);
    // Written after the commit: still covered.
    expect(lastCommitsCovered(stats([15, 12]))).toBe(true);
    // A write was in flight at the commit: a flush now would keep the commit and translog from before the purge.
    expect(lastCommitsCovered(stats([11, 12]))).toBe(false);
    expect(lastCommitsCovered(stats([12, 12], [11, 12]))).toBe(false);
  });

  it('accepts Elasticsearch 8 and 9 only', () => {
    expect(checkServerVersion({ version: { number: '8.19.2' } })).toEqual({ major: 8, minor: 19 });
    expect(checkServerVersion({ version: { number: '9.1.0' } })).toEqual({ major: 9, minor: 1 });
    expect(() => checkServerVersion({ version: { number: '7.17.0' } })).toThrow(/Elasticsearch 8 or 9/);
    expect(() => checkServerVersion({ version: { number: '2.11.0', distribution: 'opensearch' } })).toThrow(/not Elasticsearch/);
  });

  it('keeps vectors in _source on servers that would leave them out, and expunges every deleted document on merge', () => {
    expect(dropsSourceVectors({ major: 9, minor: 2 })).toBe(true);
    expect(dropsSourceVectors({ major: 8, minor: 19 })).toBe(false);
    expect(memoryIndexMapping(3, { keepSourceVectors: true }).settings.index).toMatchObject({ mapping: { exclude_source_vectors: false } });
    expect(memoryIndexMapping(3).settings.index).not.toHaveProperty('mapping');
    expect(memoryIndexMapping(3).settings.index.merge.policy.expunge_deletes_allowed).toBe(0);
  });

  it('finds current versions with the same filter semantics the property tests hold', () => {
    const doc = toDocument(makeRecord(), VECTOR);
    const current: IndexFilter = { statuses: ['active'], maxSensitivity: 'restricted', now: '2025-01-01T00:00:00.000Z' };
    expect(evaluate(compileFilterDsl(current)!, doc)).toBe(true);
    expect(evaluate(compileFilterDsl(current)!, { ...doc, tx_to: doc.tx_from + 1 })).toBe(false);
  });
});

describe('lineageOf on Elasticsearch', () => {
  const provenance = (sourceEventIds: string[], parentIds: string[], ancestry: string[]) => ({
    sourceEventIds,
    parentIds,
    rule: 'test',
    ruleVersion: '1',
    ancestry: { ids: ancestry, owners: ['alice'], projects: [], expiresAt: null },
  });
  const records = [
    makeRecord({ id: 'turn', subject: 'alice', provenance: provenance(['evt-a'], [], []) }),
    makeRecord({ id: 'summary', subject: 'team', policy: { owner: 'team' }, provenance: provenance([], ['turn'], ['turn', 'evt-a']) }),
    makeRecord({
      id: 'digest',
      subject: 'team',
      policy: { owner: 'team' },
      provenance: provenance([], ['summary'], ['summary', 'turn', 'evt-a']),
    }),
    makeRecord({ id: 'owned', subject: 'dave', policy: { owner: 'alice' }, provenance: provenance(['evt-b'], [], []) }),
  ];
  /** What the query admits, then what `lineageOf` keeps of it. */
  const lineageOf = (ids: string[], subjects: string[]) =>
    records
      .filter((r) => evaluate(lineageOfQuery(ids, subjects, 10).query, toDocument(r, undefined)))
      .map((r) => lineageEntryOf({ ...toDocument(r, undefined), record: r } as never))
      .filter((e) => lineageMatches(e, new Set(ids), new Set(subjects)))
      .map((e) => e.id);

  it('asks by id and lineage key, then keeps only direct inputs (the lineage keys name ancestors too)', () => {
    expect(records.filter((r) => evaluate(lineageOfQuery(['turn'], [], 10).query, toDocument(r, undefined))).map((r) => r.id)).toEqual([
      'turn',
      'summary',
      'digest',
    ]);
    expect(lineageOf(['turn'], [])).toEqual(['turn', 'summary']);
    expect(lineageOf(['evt-a'], [])).toEqual(['turn']);
  });

  it('asks by subject or owner, and only current versions', () => {
    expect(lineageOf([], ['alice'])).toEqual(['turn', 'owned']);
    const closed = { ...toDocument(records[0], undefined), tx_to: 1 };
    expect(evaluate(lineageOfQuery([], ['alice'], 10).query, closed)).toBe(false);
  });
});
