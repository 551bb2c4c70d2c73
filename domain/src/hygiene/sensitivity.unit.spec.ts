import { describe, expect, it } from 'vitest';
import type { Sensitivity } from '../memory/record';
import { classifySensitivity, detectPersonalMarkers, raiseSensitivity } from './sensitivity';

const noKeywords = { confidential: [], restricted: [] };

const markers = (text: string) => detectPersonalMarkers(text).map((m) => ({ kind: m.kind, text: text.slice(m.start, m.end) }));

describe('personal markers', () => {
  it.each([
    ['an email address', 'write to li.na+crm@example.com.cn today', 'email', 'li.na+crm@example.com.cn'],
    ['an international number', 'call +49 30 1234567 please', 'phone', '+49 30 1234567'],
    ['an international number with an area code in brackets', 'call +1 (415) 555-2671', 'phone', '+1 (415) 555-2671'],
    ['a compact E.164 number', 'sms +8613800138000', 'phone', '+8613800138000'],
    ['a Chinese mobile number', '手机13800138000，请回电', 'phone', '13800138000'],
    ['a Chinese mobile number in 3-4-4 groups', '手机 138-0013-8000', 'phone', '138-0013-8000'],
  ])('finds %s', (_, text, kind, found) => {
    expect(markers(text)).toEqual([{ kind, text: found }]);
  });

  it('includes secrets, by kind', () => {
    expect(markers('card 4111111111111111')).toEqual([{ kind: 'payment_card', text: '4111111111111111' }]);
  });

  it.each([
    ['a mobile-like number inside a longer digit run', '订单号 2013800138000123'],
    ['a too short international number', 'room +12 34'],
    ['a version number', 'release 13.8.0'],
    ['an at sign without a domain', 'meet @ noon, ping @li.na'],
  ])('does not flag %s', (_, text) => {
    expect(markers(text)).toEqual([]);
  });
});

describe('classifying sensitivity by rules', () => {
  it('leaves the floor at public when no rule fires', () => {
    expect(classifySensitivity('The quarterly review is on Friday.', noKeywords)).toEqual({ floor: 'public', reasons: [] });
  });

  it('makes personal data confidential', () => {
    expect(classifySensitivity('Contact: li.na@example.com, 13800138000', noKeywords)).toEqual({
      floor: 'confidential',
      reasons: ['personal:email', 'personal:phone'],
    });
  });

  it.each([
    ['a card number', 'paid with 4111 1111 1111 1111', 'secret:payment_card'],
    ['a resident id', '身份证 11010519491231002X', 'secret:cn_resident_id'],
    ['an IBAN', 'IBAN GB82 WEST 1234 5698 7654 32', 'secret:iban'],
    ['a password', '密码：Abc@1234', 'secret:password'],
    ['a private key', '-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----', 'secret:private_key'],
  ])('makes a text with %s restricted', (_, text, reason) => {
    expect(classifySensitivity(text, noKeywords)).toEqual({ floor: 'restricted', reasons: [reason] });
  });

  it('lets a secret outrank personal data, and gives both reasons', () => {
    expect(classifySensitivity('li.na@example.com pays with 5555555555554444', noKeywords)).toEqual({
      floor: 'restricted',
      reasons: ['secret:payment_card', 'personal:email'],
    });
  });

  it('never puts the matched secret into a reason', () => {
    const { reasons } = classifySensitivity('password=hunter22 card 4111111111111111', noKeywords);
    expect(reasons.join(' ')).not.toMatch(/hunter22|4111/);
  });

  describe('keywords', () => {
    const keywords = { confidential: ['Project Falcon', '内部资料'], restricted: ['机密', 'secret', 'M&A'] };

    it('matches English keywords regardless of case, and full-width forms', () => {
      expect(classifySensitivity('Status of PROJECT FALCON is green', keywords)).toEqual({
        floor: 'confidential',
        reasons: ['keyword:confidential:Project Falcon'],
      });
      expect(classifySensitivity('ＰＲＯＪＥＣＴ ＦＡＬＣＯＮ kickoff', keywords).floor).toBe('confidential');
    });

    it('matches Chinese keywords inside running text', () => {
      expect(classifySensitivity('这是公司机密文件，请勿外传', keywords)).toEqual({
        floor: 'restricted',
        reasons: ['keyword:restricted:机密'],
      });
      expect(classifySensitivity('附件为内部资料', keywords).floor).toBe('confidential');
    });

    it('matches English keywords as whole words only', () => {
      expect(classifySensitivity('The secretary booked the room', keywords).floor).toBe('public');
      expect(classifySensitivity('This is a Secret plan', keywords).floor).toBe('restricted');
      expect(classifySensitivity('the M&A pipeline', keywords).floor).toBe('restricted');
    });

    it('ignores blank keywords', () => {
      expect(classifySensitivity('anything', { confidential: ['', '  '], restricted: [] }).floor).toBe('public');
    });
  });
});

describe('raising the requested sensitivity to the floor', () => {
  it.each<[Sensitivity, Sensitivity, Sensitivity]>([
    ['internal', 'public', 'internal'],
    ['internal', 'confidential', 'confidential'],
    ['public', 'restricted', 'restricted'],
    ['restricted', 'confidential', 'restricted'],
    ['confidential', 'confidential', 'confidential'],
  ])('%s with a floor of %s is stored as %s', (requested, floor, stored) => {
    expect(raiseSensitivity(requested, floor)).toBe(stored);
  });
});
