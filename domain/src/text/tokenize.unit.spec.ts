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

describe('tokenize without ICU for spaced scripts', () => {
  const icu = new Intl.Segmenter('en', { granularity: 'word' });
  const viaIcu = (text: string) => [...icu.segment(text.normalize('NFKC').toLowerCase())].filter((s) => s.isWordLike).map((s) => s.segment);

  it('cuts English, German and Russian exactly as ICU word boundaries do', () => {
    for (const text of [
      "The customer's order #4711 didn't ship; ETA is 3.5 days, cost 1,000 EUR.",
      'Müller & Söhne GmbH bestätigt die Lieferung am Montag.',
      'Клиент подтвердил продление договора в марте.',
      'snake_case and e-mail addresses like ops@example.com',
    ]) {
      expect(tokenize(text)).toEqual(viaIcu(text));
    }
  });
});
