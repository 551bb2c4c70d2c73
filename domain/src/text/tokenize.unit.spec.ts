import { describe, expect, it } from 'vitest';
import { tokenize } from './tokenize';

describe('tokenize', () => {
  it('splits Chinese into words, not single characters or one blob', () => {
    const tokens = tokenize('客户说交付风险很高。');
    expect(tokens).toContain('客户');
    expect(tokens).toContain('交付');
    expect(tokens).not.toContain('。');
  });

  it('lower-cases English and drops punctuation', () => {
    expect(tokenize('Delivery risk is HIGH, says ACME.')).toEqual(['delivery', 'risk', 'is', 'high', 'says', 'acme']);
  });
});
