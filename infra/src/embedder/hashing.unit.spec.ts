import { describe, expect, it } from 'vitest';
import { HashingEmbedder } from './hashing';

const cosine = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i], 0);
const norm = (a: Float32Array) => Math.sqrt(cosine(a, a));

describe('HashingEmbedder', () => {
  const embedder = new HashingEmbedder();

  it('gives the same vector for the same text, across instances', async () => {
    const [a] = await embedder.embed(['The delivery risk of project Falcon is high'], 'document');
    const [b] = await new HashingEmbedder().embed(['The delivery risk of project Falcon is high'], 'document');
    expect(Array.from(a)).toEqual(Array.from(b));
  });

  it('returns one L2-normalised vector per text, in input order', async () => {
    const texts = ['交付风险很高', 'delivery risk is high', 'x'];
    const vectors = await embedder.embed(texts, 'document');
    expect(vectors).toHaveLength(3);
    for (const v of vectors) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(384);
      expect(norm(v)).toBeCloseTo(1, 5);
    }
    expect(Array.from(vectors[1])).toEqual(Array.from(embedder.embedOne('delivery risk is high')));
  });

  it('places similar English texts closer than unrelated ones', () => {
    const query = embedder.embedOne('what is the delivery risk of project Falcon?');
    const similar = embedder.embedOne('Project Falcon has a high delivery risk');
    const unrelated = embedder.embedOne('The cafeteria serves noodles on Fridays');
    expect(cosine(query, similar)).toBeGreaterThan(cosine(query, unrelated) + 0.2);
  });

  it('places similar Chinese texts closer than unrelated ones', () => {
    const query = embedder.embedOne('猎鹰项目的交付风险');
    const similar = embedder.embedOne('猎鹰项目交付风险很高，需要增加人手');
    const unrelated = embedder.embedOne('食堂周五供应面条');
    expect(cosine(query, similar)).toBeGreaterThan(cosine(query, unrelated) + 0.2);
  });

  it('matches word forms through character n-grams', () => {
    const a = embedder.embedOne('deliveries');
    const b = embedder.embedOne('delivery');
    const c = embedder.embedOne('noodles');
    expect(cosine(a, b)).toBeGreaterThan(cosine(a, c));
  });

  it('honours the configured dimensions and keeps text without words at zero', () => {
    const small = new HashingEmbedder({ dimensions: 64 });
    expect(small.embedOne('hello world').length).toBe(64);
    expect(norm(small.embedOne('!!! ...'))).toBe(0);
    expect(small.model).toBe('hashing-v1');
  });
});
