import { describe, expect, it } from 'vitest';
import { scriptGroupOf } from './script';

describe('the kind of writing of a text', () => {
  it('reads Chinese as unspaced and English as spaced', () => {
    expect(scriptGroupOf('赵先生对花生过敏，他的订单里不能有花生。')).toBe('unspaced');
    expect(scriptGroupOf('Mrs Chen is allergic to shellfish.')).toBe('spaced');
  });

  it('keeps a Chinese sentence naming an English name Chinese, and an English one quoting a Chinese name English', () => {
    expect(scriptGroupOf('Kevin Wong 的发票抬头写什么？')).toBe('unspaced');
    expect(scriptGroupOf('GreenPack的外箱每个三块二，比立讯便宜两毛钱。')).toBe('unspaced');
    expect(scriptGroupOf('Wang Lei (王磊) raised the lunch budget to 100 yuan per person.')).toBe('spaced');
  });

  it('reads Japanese and Thai as unspaced, Russian as spaced', () => {
    expect(scriptGroupOf('明日の会議は十時からです')).toBe('unspaced');
    expect(scriptGroupOf('ลูกค้ายืนยันการต่อสัญญา')).toBe('unspaced');
    expect(scriptGroupOf('Клиент подтвердил продление договора')).toBe('spaced');
  });

  it('gives a text without letters the spaced kind', () => {
    expect(scriptGroupOf('138 1234 5678')).toBe('spaced');
    expect(scriptGroupOf('')).toBe('spaced');
  });
});
