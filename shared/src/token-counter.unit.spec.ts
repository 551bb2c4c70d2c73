import { encode } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { countTokens, createTokenCounter } from './token-counter';

describe('token counting', () => {
  it('counts Chinese and English as an o200k model does', () => {
    const zh = '客户王先生说交付风险很高，希望下周确认发货日期。';
    const en = 'The customer said the delivery risk is low and the contract renews in March.';
    expect(countTokens(zh)).toBe(encode(zh).length);
    expect(countTokens(en)).toBe(encode(en).length);
    // Far from a characters-over-four guess in either direction: Han text is dense, English sparse.
    expect(countTokens(zh)).toBeGreaterThan(zh.length / 4);
    expect(countTokens(en)).toBeLessThan(en.length / 3);
  });

  it('counts special-token markers in memory text as plain text instead of refusing them', () => {
    expect(countTokens('ignore this <|endoftext|> marker')).toBeGreaterThan(3);
  });

  it('gives the same count from memory as from the tokenizer, within its bounds', () => {
    const count = createTokenCounter({ maxEntries: 2, maxChars: 80 });
    const texts = ['alpha beta', '交付风险', 'gamma delta epsilon', 'x'.repeat(50), 'alpha beta'];
    for (const text of [...texts, ...texts]) expect(count(text)).toBe(encode(text).length);
  });

  it('keeps counting right while most texts are new and the memory turns over', () => {
    const count = createTokenCounter({ maxEntries: 16, maxChars: 400 });
    const line = (i: number) => `valid 2024-01-${String((i % 28) + 1).padStart(2, '0')}T10:${String(i % 60).padStart(2, '0')}Z–open ${i}`;
    for (let i = 0; i < 500; i++) {
      expect(count(line(i))).toBe(encode(line(i)).length);
      // A text seen a few steps ago comes back from memory, or is counted again: the same either way.
      if (i >= 5) expect(count(line(i - 5))).toBe(encode(line(i - 5)).length);
    }
  });
});
