import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECALLABLE_STATUSES, type HybridQuery, type IndexFilter, type LineageEntry, type MemoryIndex } from '@elma/domain';
import type { MemoryIndexFixture } from './contract';
import { embed, indexed, sameVector } from './fixtures';

const A = 'tenant-a';
const NOW = '2025-01-01T00:00:00.000Z';
const openFilter: IndexFilter = { statuses: RECALLABLE_STATUSES, maxSensitivity: 'restricted', now: NOW };
/** The model an index is configured with when its options name none (both adapters). */
const MODEL = 'unnamed';

const bm25 = (text: string): HybridQuery => ({ tenant: A, text, limit: 10, filter: openFilter });
const dense = (text: string): HybridQuery => ({ tenant: A, text: '', vector: embed(text), limit: 10, filter: openFilter });
/** A record as the projection now writes it: without a vector. */
const unembedded = (id: string, text: string, version = 1) => ({ record: indexed({ id, tenant: A, text, version }).record });
const vectorOf = (id: string, text: string, version = 1, model = MODEL) => ({ id, version, vector: embed(text), model });

/**
 * Background embedding (issue 15): a record is written without its vector,
 * BM25 finds it at once, the dense route once `setVectors` gave it one; a
 * vector for a version no longer current, a purged record or another model
 * is ignored; the dense route never compares vectors of two models.
 */
export function embeddingContract(name: string, factory: () => Promise<MemoryIndexFixture>): void {
  describe(`MemoryIndex contract, background embedding: ${name}`, () => {
    let fixture: MemoryIndexFixture;
    let index: MemoryIndex;
    const ids = async (q: HybridQuery) => (await index.search(q)).map((h) => h.record.id);

    beforeEach(async () => {
      fixture = await factory();
      index = fixture.index;
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    it('finds a record written without a vector by BM25 at once, not by the dense route, and lists it as pending', async () => {
      const before = Date.now();
      await index.upsert(A, [unembedded('p-1', 'The customer prefers email over phone calls.'), unembedded('zh', '客户更喜欢用邮件联系')]);

      expect(await ids(bm25('customer email'))).toEqual(['p-1']);
      expect(await ids(bm25('邮件'))).toEqual(['zh']);
      expect(await ids(dense('The customer prefers email over phone calls.'))).toEqual([]);
      const got = await index.get(A, 'p-1');
      expect(got?.record.id).toBe('p-1');
      expect(got?.vector).toBeUndefined();
      const [hit] = await index.search(bm25('customer email'));
      expect(hit.vector).toBeUndefined();
      expect(hit.cosine).toBeUndefined();

      const pending = await index.pendingEmbeddings(A, 10);
      expect(pending).toEqual(
        expect.arrayContaining([
          { id: 'p-1', version: 1, text: 'The customer prefers email over phone calls.' },
          { id: 'zh', version: 1, text: '客户更喜欢用邮件联系' },
        ]),
      );
      expect(pending).toHaveLength(2);
      expect(await index.pendingEmbeddings(A, 1)).toHaveLength(1);
      const lag = await index.embeddingLag(A);
      expect(lag).toMatchObject({ pending: 2, reindexNeeded: [] });
      expect(Date.parse(lag.oldestPendingAt!)).toBeGreaterThanOrEqual(before - 1000);
      expect((await index.embeddingLag()).pending).toBe(2);
      const lineage: LineageEntry[] = [];
      for await (const entry of index.lineage(A)) lineage.push(entry);
      expect(lineage.every((e) => e.vectorModel === undefined)).toBe(true);
    });

    it('finds a record by the dense route once setVectors gave it a vector, and records the model in its lineage', async () => {
      const text = 'The customer prefers email over phone calls.';
      await index.upsert(A, [unembedded('p-1', text), unembedded('zh', '客户更喜欢用邮件联系')]);
      await index.setVectors(A, [vectorOf('p-1', text), vectorOf('zh', '客户更喜欢用邮件联系')]);

      expect((await ids(dense(text)))[0]).toBe('p-1');
      expect((await ids(dense('客户更喜欢用邮件联系')))[0]).toBe('zh');
      expect(await ids(bm25('customer email'))).toEqual(['p-1']);
      const got = await index.get(A, 'p-1');
      expect(sameVector(got?.vector, embed(text))).toBe(true);
      expect(got!.model).toBe(MODEL);
      const [hit] = await index.search(dense(text));
      // Near 1 rather than exactly: an index may store the vector quantised (see sameVector).
      expect(hit.cosine).toBeCloseTo(1, 3);
      expect(await index.pendingEmbeddings(A, 10)).toEqual([]);
      expect(await index.embeddingLag(A)).toEqual({ pending: 0, reindexNeeded: [] });
      const lineage: LineageEntry[] = [];
      for await (const entry of index.lineage(A)) lineage.push(entry);
      expect(lineage.map((e) => e.vectorModel)).toEqual([MODEL, MODEL]);
    });

    it('ignores a vector for a version that is no longer current, for a purged record, an unknown id or another model', async () => {
      await index.upsert(A, [unembedded('m', 'budget approved for the falcon project')]);
      await index.upsert(A, [unembedded('m', 'budget rejected for the eagle project', 2)]);
      await index.upsert(A, [unembedded('gone', 'a note about the heron budget')]);
      await index.purge(A, ['gone']);

      await index.setVectors(A, [
        vectorOf('m', 'budget approved for the falcon project', 1),
        vectorOf('gone', 'a note about the heron budget'),
        vectorOf('never', 'no such record'),
        vectorOf('m', 'budget rejected for the eagle project', 2, 'some-other-model@1'),
      ]);

      expect(await ids(dense('budget approved for the falcon project'))).toEqual([]);
      expect(await ids(dense('a note about the heron budget'))).toEqual([]);
      expect(await index.get(A, 'gone')).toBeUndefined();
      expect(await index.get(A, 'never')).toBeUndefined();
      expect(await index.count(A)).toBe(1);
      expect(await index.pendingEmbeddings(A, 10)).toEqual([{ id: 'm', version: 2, text: 'budget rejected for the eagle project' }]);

      await index.setVectors(A, [vectorOf('m', 'budget rejected for the eagle project', 2)]);
      expect(await ids(dense('budget rejected for the eagle project'))).toEqual(['m']);
      expect((await index.embeddingLag(A)).pending).toBe(0);
    });

    it('makes a record embedded earlier pending again when a new version of it is written', async () => {
      await index.upsert(A, [unembedded('m', 'budget approved for the falcon project')]);
      await index.setVectors(A, [vectorOf('m', 'budget approved for the falcon project')]);
      await index.upsert(A, [unembedded('m', 'budget rejected for the eagle project', 2)]);

      expect(await ids(dense('budget approved for the falcon project'))).toEqual([]);
      expect(await ids(bm25('eagle'))).toEqual(['m']);
      expect(await index.pendingEmbeddings(A, 10)).toEqual([{ id: 'm', version: 2, text: 'budget rejected for the eagle project' }]);
    });

    it('answers the dense route with nothing from another model’s vectors, and a rebuild re-embeds with the new one', async () => {
      if (!fixture.reopen) return;
      const text = 'The customer prefers email over phone calls.';
      await index.upsert(A, [indexed({ id: 'old', tenant: A, text })]);
      expect(await ids(dense(text))).toEqual(['old']);

      index = await fixture.reopen({ model: 'model-b@2' });
      // Model A's vectors are not comparable with model B's queries: not searched, and the tenant is flagged.
      expect(await ids(dense(text))).toEqual([]);
      expect(await ids(bm25('customer email'))).toEqual(['old']);
      expect((await index.embeddingLag()).reindexNeeded).toEqual([A]);
      // get() may still return the old vector, but then under its own model's name.
      const stale = await index.get(A, 'old');
      expect(stale?.vector === undefined || stale.model !== 'model-b@2').toBe(true);

      // What ReindexWorkflow does: drop the tenant's views and replay its records (without vectors).
      const { record } = (await index.get(A, 'old'))!;
      await index.dropTenant(A);
      await index.upsert(A, [{ record }]);
      expect(await index.pendingEmbeddings(A, 10)).toEqual([{ id: 'old', version: record.version, text }]);
      await index.setVectors(A, [{ ...vectorOf('old', text, record.version), model: 'model-b@2' }]);

      expect(await ids(dense(text))).toEqual(['old']);
      expect(await index.embeddingLag()).toEqual({ pending: 0, reindexNeeded: [] });
      expect((await index.get(A, 'old'))?.model).toBe('model-b@2');
    });
  });
}
