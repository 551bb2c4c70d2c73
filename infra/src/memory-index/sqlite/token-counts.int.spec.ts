import { encode } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { RECALLABLE_STATUSES, type HybridQuery } from '@elma/domain';
import { embed, indexed } from '../fixtures';
import { scratchIndex } from './scratch.testing';
import { SqliteMemoryIndex } from './sqlite-memory-index';

const T = 'tenant-a';
const MODEL = 'hashing-384';
const ZH = '猎鹰项目的交付风险很高，需要增加人手。';
const EN = 'The falcon project has a high delivery risk and needs more people.';

/** The token count each hit carries, by id (undefined: the index keeps none for it yet). */
async function tokensOf(index: SqliteMemoryIndex, text: string): Promise<Map<string, number | undefined>> {
  const query: HybridQuery = {
    tenant: T,
    text,
    limit: 10,
    filter: { statuses: RECALLABLE_STATUSES, maxSensitivity: 'restricted', now: '2025-01-01T00:00:00.000Z' },
  };
  return new Map((await index.search(query)).map((hit) => [hit.record.id, hit.tokens]));
}

describe('SqliteMemoryIndex token counts', () => {
  const scratch = scratchIndex('token-counts');
  const open = () => SqliteMemoryIndex.open({ dir: scratch.dir, dimensions: 384, model: MODEL });

  it('counts the tokens of a record indexed without its vector when the embedding stage sets the vector, not before', async () => {
    scratch.index = await open();
    const records = [indexed({ id: 'zh', tenant: T, text: ZH }), indexed({ id: 'en', tenant: T, text: EN })].map(({ record }) => ({
      record,
    }));
    await scratch.index.upsert(T, records);
    // Searchable at once, without a count: the projection does not pay for the tokenizer.
    expect(await tokensOf(scratch.index, '风险')).toEqual(new Map([['zh', undefined]]));

    const pending = await scratch.index.pendingEmbeddings(T, 10);
    await scratch.index.setVectors(
      T,
      pending.map((p) => ({ id: p.id, version: p.version, vector: embed(p.text), model: MODEL })),
    );
    expect(await tokensOf(scratch.index, '风险')).toEqual(new Map([['zh', encode(ZH).length]]));
    expect(await tokensOf(scratch.index, 'falcon')).toEqual(new Map([['en', encode(EN).length]]));
  });

  it('counts the tokens of a record indexed with its vector at once', async () => {
    scratch.index = await open();
    await scratch.index.upsert(T, [indexed({ id: 'en', tenant: T, text: EN })]);
    expect(await tokensOf(scratch.index, 'falcon')).toEqual(new Map([['en', encode(EN).length]]));
  });
});
