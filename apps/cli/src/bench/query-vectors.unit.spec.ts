import { describe, expect, it } from 'vitest';
import { HashingEmbedder } from '@elma/infra';
import { PrecomputedQueryEmbedder } from './query-vectors';

describe('the engine figures’ embedder', () => {
  it('is presented as semantic, so that recall runs its dense route, with the inner model and dimensions', () => {
    const embedder = new PrecomputedQueryEmbedder(new HashingEmbedder({ dimensions: 64 }));
    expect(embedder.semantic).toBe(true);
    expect(embedder.model).toBe('hashing-v1');
    expect(embedder.dimensions).toBe(64);
  });

  it('answers a precomputed query with the vector made ahead, and embeds anything else when asked', async () => {
    const inner = new HashingEmbedder();
    const embedder = new PrecomputedQueryEmbedder(inner);
    const times = await embedder.precompute(['delivery risk', '交付 风险']);
    expect(times).toHaveLength(2);
    const [made] = await embedder.embed(['delivery risk'], 'query');
    expect(made).toBe(embedder.vectorOf('delivery risk'));
    expect(Array.from(made)).toEqual(Array.from(inner.embedOne('delivery risk')));
    expect(embedder.vectorOf('invoice')).toBeUndefined();
    const [asked] = await embedder.embed(['invoice'], 'query');
    expect(Array.from(asked)).toEqual(Array.from(inner.embedOne('invoice')));
    const [document] = await embedder.embed(['delivery risk'], 'document');
    expect(document).not.toBe(made);
  });
});
