import { randomBytes } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { memoryIndexContract } from '../contract';
import { embed, indexed, searchIds } from '../fixtures';
import { filesContaining, inspectIndices, localNode, segmentCounts } from '../../../../tests/support/elasticsearch-files';
import { ElasticsearchMemoryIndex } from './elasticsearch-memory-index';
import { MAPPING_VERSION, aliasName, indexName, memoryIndexMapping } from './mapping';
import { checkServerVersion, dropsSourceVectors } from './requests';

const URL = process.env.ELMA_ELASTICSEARCH_URL;
/** The node's folder (start-elasticsearch.mjs prints it as ELMA_ES_DATA), known only when the node runs on this machine. */
const DATA = process.env.ELMA_ELASTICSEARCH_DATA;
const DIMENSIONS = 384;
const T = 'tenant-a';

/** A namespace of its own per case, so cases share one server without seeing each other. */
const freshNamespace = () => `elmatest_${randomBytes(6).toString('hex')}`;

/** Deletes every index of the namespace (a namespace has no hyphen, so the pattern reaches no other). */
async function deleteNamespace(node: string, namespace: string): Promise<void> {
  const client = new Client({ node });
  try {
    await client.indices.delete({ index: `${namespace}-*`, allow_no_indices: true, ignore_unavailable: true, expand_wildcards: 'all' });
  } finally {
    await client.close();
  }
}

/**
 * Every Elasticsearch distribution has the `english` analyzer (module analysis-common); a stripped build
 * without it still runs the suite with `standard`, and the suite's title says so.
 */
async function textAnalyzer(node: string): Promise<'english' | 'standard'> {
  const response = await fetch(new globalThis.URL('/_analyze', node), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ analyzer: 'english', text: 'probe' }),
  });
  return response.ok ? 'english' : 'standard';
}
const ANALYZER = URL ? await textAnalyzer(URL) : 'english';
const analyzerNote = ANALYZER === 'english' ? '' : ' (server lacks the english analyzer: text analysed with standard)';

/** The server's version as `GET /` gives it (what the adapter checks on open), so a run's output names the engine it ran on. */
async function serverVersion(node: string): Promise<string> {
  const response = await fetch(new globalThis.URL('/', node));
  const info = (await response.json().catch(() => ({}))) as { version?: { number?: string; lucene_version?: string } };
  return `Elasticsearch ${info.version?.number ?? `unknown (GET / answered ${response.status})`}${info.version?.lucene_version ? ` (Lucene ${info.version.lucene_version})` : ''}`;
}
if (URL) console.log(`Elasticsearch contract suite: the server is ${await serverVersion(URL)}`);

const open = (node: string, namespace: string, extra: { serverRrf?: boolean; model?: string } = {}) =>
  ElasticsearchMemoryIndex.open({
    node,
    dimensions: DIMENSIONS,
    namespace,
    refresh: true,
    ...(ANALYZER === 'english' ? {} : { textAnalyzer: ANALYZER }),
    ...extra,
  });

function fixtureFactory(node: string, extra: { serverRrf?: boolean } = {}) {
  return async () => {
    const namespace = freshNamespace();
    let index = await open(node, namespace, extra);
    return {
      index,
      async reopen(options: { model?: string } = {}) {
        await index.close();
        index = await open(node, namespace, { ...extra, ...options });
        return index;
      },
      async cleanup() {
        await index.close();
        await deleteNamespace(node, namespace);
      },
    };
  };
}

const search = (index: ElasticsearchMemoryIndex, text: string, vector?: Float32Array): Promise<string[]> =>
  searchIds(index, T, text, vector);

if (URL) {
  memoryIndexContract(`ElasticsearchMemoryIndex${analyzerNote}`, fixtureFactory(URL));

  describe(`ElasticsearchMemoryIndex on a server${analyzerNote}`, () => {
    let namespace: string;
    let index: ElasticsearchMemoryIndex;
    let client: Client;
    beforeEach(async () => {
      namespace = freshNamespace();
      index = await open(URL, namespace);
      client = new Client({ node: URL });
    });
    afterEach(async () => {
      await index?.close();
      await client?.close();
      await deleteNamespace(URL, namespace);
    });

    it('leaves no document of a purged record, in any version, and expunges the deleted documents', async () => {
      const victim = indexed({ id: 'victim', tenant: T, text: 'Patient ZQXMARKER9731 was diagnosed with 糖尿病 in March.' });
      const neighbours = Array.from({ length: 300 }, (_, i) =>
        indexed({ id: `n-${i}`, tenant: T, text: `routine note ${i} about the patient portal` }),
      );
      await index.upsert(T, [victim, ...neighbours]);
      await index.upsert(T, [{ ...victim, record: { ...victim.record, version: 2, revisedAt: '2024-06-01T00:00:00.000Z' } }]);
      await index.recordUsage(T, ['victim'], 'retrieved', '2026-01-01T00:00:00.000Z');
      const alias = aliasName(T, namespace);
      const everyVersion = () => client.count({ index: alias, query: { term: { id: 'victim' } } }).then((r) => r.count);
      expect(await everyVersion()).toBe(2);

      await index.purge(T, ['victim']);

      expect(await everyVersion()).toBe(0);
      expect(await index.count(T)).toBe(300);
      expect(await search(index, 'ZQXMARKER9731', victim.vector)).not.toContain('victim');
      const stats = await client.indices.stats({ index: alias, metric: 'docs' });
      expect(stats._all.primaries?.docs?.deleted).toBe(0);
      const usage = await client.count({ index: `${namespace}-${T}-usage`, query: { term: { id: 'victim' } } });
      expect(usage.count).toBe(0);
    });

    it('purges down to the files: no segment keeps a live or deleted document of the records, which a plain delete leaves behind', async (context) => {
      if (!DATA)
        return context.skip(
          "ELMA_ELASTICSEARCH_DATA is not set (the node's folder is not on this machine): get/BM25/kNN and stats only, above",
        );
      const node = await localNode(URL, DATA);
      const english = indexed({
        id: 'erase-en',
        tenant: T,
        text: 'Quorvath Ellingsworth hides the vault code ZQXMARKER4417 in his glovebox.',
      });
      const chinese = indexed({ id: 'erase-zh', tenant: T, text: '患者欧阳鸮鹦的病历编号是七三一，放在二号柜。' });
      const ids = ['erase-en', 'erase-zh'];
      const neighbours = Array.from({ length: 50 }, (_, i) =>
        indexed({ id: `n-${i}`, tenant: T, text: `routine note ${i} about the patient portal 门诊 ${i}` }),
      );
      await index.upsert(T, [english, chinese, ...neighbours]);
      await index.recordUsage(T, ids, 'retrieved', '2026-01-01T00:00:00.000Z');
      const indices = [`${namespace}-*`];
      // Words as the analyzers keep them (lower case; CJK bigrams), so the terms dictionary is searched too.
      const needles = { texts: ['zqxmarker4417', 'quorvath', '鸮鹦', '病历编号', ...ids], vectors: [english.vector!, chinese.vector!] };
      const places = (hits: { needle: string; in: string; field: string }[]) => [
        ...new Set(hits.map((h) => `${h.needle} ${h.in} ${h.field}`)),
      ];

      // A plain delete: gone for queries, still in the segments (soft deletes) and, raw, in the translog.
      await client.deleteByQuery({ index: indices, query: { terms: { id: ids } }, refresh: true });
      expect(await search(index, 'Quorvath vault code ZQXMARKER4417', english.vector)).not.toContain('erase-en');
      expect(filesContaining(node.folder, Buffer.from('ZQXMARKER4417')).length).toBeGreaterThan(0);
      const before = await inspectIndices(node, indices, needles);
      expect(before.hits.every((h) => h.deleted)).toBe(true);
      expect(places(before.hits)).toEqual(
        expect.arrayContaining([
          'zqxmarker4417 stored _source',
          'zqxmarker4417 terms text',
          '鸮鹦 stored _source',
          '鸮鹦 terms text.cjk',
          '病历编号 stored _source',
          'erase-en stored _id',
          'erase-en terms id',
          'erase-en docValues id',
          'erase-zh stored _id',
          'vector #0 vectors vector',
          'vector #1 vectors vector',
        ]),
      );
      expect(Object.values(await segmentCounts(URL, indices)).some((c) => c.deleted > 0)).toBe(true);

      await index.purge(T, ids);

      for (const [name, counts] of Object.entries(await segmentCounts(URL, indices)))
        expect({ name, deleted: counts.deleted }).toEqual({ name, deleted: 0 });
      for (const needle of [english.record.content.text, chinese.record.content.text, 'ZQXMARKER4417', '鸮鹦', ...ids]) {
        expect({ needle, files: filesContaining(node.folder, Buffer.from(needle)) }).toEqual({ needle, files: [] });
      }
      const after = await inspectIndices(node, indices, needles);
      expect(after.hits).toEqual([]);
      expect(after.segments.filter((s) => s.deleted > 0)).toEqual([]);
      expect(after.segments.reduce((n, s) => n + s.maxDoc, 0)).toBeGreaterThanOrEqual(50);
      for (const id of ids) expect(await index.get(T, id)).toBeUndefined();
      expect(await search(index, 'Quorvath vault code ZQXMARKER4417', english.vector)).not.toContain('erase-en');
      expect(await search(index, '鸮鹦 病历编号', chinese.vector)).not.toContain('erase-zh');
      expect(await index.count(T)).toBe(50);
    });

    it('reindexes into a new index and swaps the alias in one step, keeping search results and usage counts', async () => {
      const memories = Array.from({ length: 50 }, (_, i) =>
        indexed({ id: `m-${i}`, tenant: T, text: `shipment delay report ${i} 发货 延迟 ${i}` }),
      );
      await index.upsert(T, memories);
      await index.recordUsage(T, ['m-7'], 'adopted', '2026-01-01T00:00:00.000Z');
      const before = await search(index, 'shipment delay report 7', embed('shipment delay report 7 发货 延迟 7'));
      const alias = aliasName(T, namespace);
      const [oldIndex] = Object.keys(await client.indices.getAlias({ name: alias }));

      let seenWhileFilling: number | undefined;
      const result = await index.reindex(T, async (target) => {
        for (let i = 0; i < memories.length; i += 20) await target.upsert(T, memories.slice(i, i + 20));
        // The filler reads what it wrote (the projection settles conflicts against it); readers of the alias do not yet.
        seenWhileFilling = await target.count(T);
      });

      expect(seenWhileFilling).toBe(50);

      expect(result).toMatchObject({ from: oldIndex, count: 50 });
      expect(result.to).not.toBe(oldIndex);
      expect(Object.keys(await client.indices.getAlias({ name: alias }))).toEqual([result.to]);
      expect(await client.indices.exists({ index: oldIndex })).toBe(false);
      expect(await search(index, 'shipment delay report 7', embed('shipment delay report 7 发货 延迟 7'))).toEqual(before);
      expect((await index.get(T, 'm-7'))?.record.usage.adopted).toBe(1);
      expect(await index.tenants()).toEqual([T]);
    });

    it('keeps answering from an index of mapping version 1, and its reindex gives the older documents their date words', async () => {
      // A tenant indexed before version 2: its index carries the old name and documents without the date line.
      const alias = aliasName(T, namespace);
      const body = memoryIndexMapping(DIMENSIONS, { keepSourceVectors: dropsSourceVectors(checkServerVersion(await client.info())) });
      const v1: object = { ...body, mappings: { ...body.mappings, _meta: { mapping_version: 1 } } };
      await client.indices.create({ index: indexName(T, 1, namespace), ...v1, aliases: { [alias]: { is_write_index: true } } });
      const memories = [
        indexed({ id: 'paint', tenant: T, text: 'Melanie: I painted a sunrise.', validFrom: '2023-05-08T13:56:00.000Z' }),
        indexed({ id: 'trip', tenant: T, text: '卡罗琳：我们下周去海边露营。', validFrom: '2023-07-21T09:00:00.000Z' }),
      ];
      await index.upsert(T, memories);
      // Written back as version 1 wrote them: the text alone (the test node has no _update_by_query).
      const { hits } = await client.search<{ text: string; record: { content: { text: string } } }>({ index: alias, size: 10 });
      for (const hit of hits.hits) {
        await client.index({ index: hit._index, id: hit._id!, document: { ...hit._source!, text: hit._source!.record.content.text } });
      }
      await client.indices.refresh({ index: alias });
      expect(await search(index, 'paintings')).toEqual(['paint']);
      expect(await search(index, '8 May 2023')).toEqual([]);

      const result = await index.reindex(T, (target) => target.upsert(T, memories));
      expect(result.to).toContain(`-memories-v${MAPPING_VERSION}-r`);
      expect((await search(index, 'What happened on 8 May 2023?'))[0]).toBe('paint');
      expect((await search(index, '2023年7月21日发生了什么'))[0]).toBe('trip');
    });

    it('leaves the alias where it was when the fill fails', async () => {
      await index.upsert(T, [indexed({ id: 'a', tenant: T, text: 'kept note' })]);
      const alias = aliasName(T, namespace);
      const before = Object.keys(await client.indices.getAlias({ name: alias }));
      await expect(index.reindex(T, async () => Promise.reject(new Error('fill failed')))).rejects.toThrow('fill failed');
      expect(Object.keys(await client.indices.getAlias({ name: alias }))).toEqual(before);
      expect(await search(index, 'kept note')).toEqual(['a']);
      expect((await client.cat.indices({ index: `${namespace}-*`, format: 'json' })).map((i) => i.index)).toEqual(before);
    });

    it('fuses on the server when asked, with the same top hits', async (context) => {
      const serverSide = await open(URL, namespace, { serverRrf: true });
      try {
        await index.upsert(T, [
          indexed({ id: 'en', tenant: T, text: 'The cafeteria serves beef noodles every Friday.' }),
          indexed({ id: 'zh', tenant: T, text: '食堂每周五供应牛肉面。' }),
          indexed({ id: 'risk', tenant: T, text: 'The delivery risk of project Falcon is high.' }),
        ]);
        const q = (i: ElasticsearchMemoryIndex) => search(i, 'cafeteria noodles', embed('cafeteria noodles'));
        const probe = await q(serverSide).catch((error: { type?: string; status?: number }) => error);
        // The RRF retriever is a module (rank-rrf) that stripped builds leave out, and a licensed feature on 8.x
        // (refused with 403 security_exception under the basic licence).
        if (!Array.isArray(probe) && probe.type === 'parsing_exception') return context.skip('this server has no rrf retriever');
        if (!Array.isArray(probe) && probe.type === 'security_exception' && probe.status === 403)
          return context.skip("this server's licence does not include the rrf retriever");
        expect((await q(serverSide))[0]).toBe('en');
        expect((await q(serverSide))[0]).toBe((await q(index))[0]);
      } finally {
        await serverSide.close();
      }
    });

    it('rejects records of another tenant, wrong-sized vectors and unsafe tenant ids, without creating an index', async () => {
      await expect(index.upsert(T, [indexed({ id: 'x', tenant: 'tenant-b' })])).rejects.toThrow(/another tenant/);
      await expect(index.upsert(T, [{ ...indexed({ id: 'x', tenant: T }), vector: new Float32Array(3) }])).rejects.toThrow(/384/);
      for (const tenant of ['Tenant', '*', 'a,b', '-a', '_a']) await expect(index.count(tenant)).rejects.toThrow(RangeError);
      expect(await index.count('unknown-tenant')).toBe(0);
      expect(await index.tenants()).toEqual([]);
    });

    it('stores a record whose vector is all zeros, and returns it as stored', async () => {
      const zero = { ...indexed({ id: 'z', tenant: T, text: 'zero vector note' }), vector: new Float32Array(DIMENSIONS) };
      await index.upsert(T, [zero]);
      expect(Array.from((await index.get(T, 'z'))!.vector!)).toEqual(Array.from(zero.vector));
      expect(await search(index, 'zero vector note', embed('zero vector note'))).toEqual(['z']);
    });

    it('refuses a server that is not reachable, with an error that names no credentials', async () => {
      await expect(ElasticsearchMemoryIndex.open({ node: 'http://user:secret@127.0.0.1:1', dimensions: DIMENSIONS })).rejects.toThrow(
        /^Elasticsearch at http:\/\/127\.0\.0\.1:1 is not reachable/,
      );
    });
  });
} else {
  describe.skip('Elasticsearch contract (skipped: set ELMA_ELASTICSEARCH_URL=http://host:9200 to run against a real server)', () => {
    it('runs the MemoryIndex contract against a real Elasticsearch 8 or 9', () => undefined);
  });
}
