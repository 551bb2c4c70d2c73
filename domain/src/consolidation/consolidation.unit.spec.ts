import { describe, expect, it } from 'vitest';
import { nearDuplicateGroups } from './duplicates';
import { dueDate, extractFacts } from './facts';
import { extractiveSummary } from './summary';

const at = '2026-12-02T10:00:00Z'; // a Wednesday

describe('fact extraction from what a speaker says about themselves', () => {
  it.each([
    ['I prefer email over phone calls.', 'preference', 'email over phone calls'],
    ["I don't like calls before 9am, thanks", 'dislike', 'calls before 9am'],
    ['My favourite carrier is DHL.', 'preference', 'DHL'],
    ["I'm the project manager for Apollo.", 'role', 'project manager for Apollo'],
    ['我更喜欢微信联系。', 'preference', '微信联系'],
    ['我不喜欢周末开会', 'dislike', '周末开会'],
    ['我是华东区的销售经理，负责大客户。', 'role', '华东区的销售经理'],
  ])('%s -> %s: %s', (text, attribute, value) => {
    expect(extractFacts(text, at)).toEqual([expect.objectContaining({ attribute, value })]);
  });

  it('reads commitments with their due dates, in English and Chinese', () => {
    expect(extractFacts('I will send the signed contract by Friday.', at)).toEqual([
      { attribute: 'commitment', value: 'send the signed contract by Friday', due: '2026-12-04', pattern: 'en.commitment' },
    ]);
    expect(extractFacts('We will deliver on 2026-12-10, as agreed', at)[0]).toMatchObject({ due: '2026-12-10' });
    expect(extractFacts('我会在12月15日前提交报价', at)[0]).toMatchObject({
      attribute: 'commitment',
      value: '在12月15日前提交报价',
      due: '2026-12-15',
    });
    expect(extractFacts('我们保证明天发货', at)[0]).toMatchObject({ attribute: 'commitment', due: '2026-12-03' });
    expect(extractFacts('I will think about it', at)[0]).not.toHaveProperty('due');
  });

  it('does not read a dislike as a preference, or facts where nobody speaks of themselves', () => {
    expect(extractFacts("I don't like the new portal", at).map((f) => f.attribute)).toEqual(['dislike']);
    expect(extractFacts('The customer prefers email. They will call back.', at)).toEqual([]);
    expect(extractFacts('Delivery risk is high.', at)).toEqual([]);
  });
});

describe('due dates', () => {
  it('take the next occurrence on or after the event', () => {
    expect(dueDate('by 3 March', at)).toBe('2027-03-03');
    expect(dueDate('on December 24', at)).toBe('2026-12-24');
    expect(dueDate('by Wednesday', at)).toBe('2026-12-09');
    expect(dueDate('下周一', at)).toBe('2026-12-07');
    expect(dueDate('tomorrow', '2026-12-31T23:00:00Z')).toBe('2027-01-01');
  });
});

describe('extractive session summaries', () => {
  const session = [
    { id: 'm1', text: 'Hello! The shipment to Shanghai is delayed by two weeks.' },
    { id: 'm2', text: 'The shipment to Shanghai is delayed. Customs needs the commercial invoice.' },
    { id: 'm3', text: '客户要求下周五前提供新的交货日期。好的。' },
  ];

  it('covers the distinct content with few sentences, in order, citing its sources', () => {
    const summary = extractiveSummary(session, 3);
    const texts = summary.sentences.map((s) => s.text);
    expect(texts).toContain('The shipment to Shanghai is delayed by two weeks.');
    expect(texts).toContain('Customs needs the commercial invoice.');
    expect(texts).toContain('客户要求下周五前提供新的交货日期。');
    expect(texts).not.toContain('The shipment to Shanghai is delayed.');
    expect(summary.sourceIds).toEqual(['m1', 'm2', 'm3']);
    expect(summary.coverage).toBeGreaterThan(0.8);
  });

  it('stops when nothing new is added or the limit is reached', () => {
    expect(extractiveSummary(session, 1).sentences).toHaveLength(1);
    expect(
      extractiveSummary(
        [
          { id: 'a', text: 'same words.' },
          { id: 'b', text: 'Same words!' },
        ],
        5,
      ).sentences,
    ).toHaveLength(1);
    expect(extractiveSummary([], 3)).toEqual({ sentences: [], sourceIds: [], coverage: 0 });
  });
});

describe('near-duplicate groups', () => {
  const unit = (...xs: number[]) => {
    const v = Float32Array.from(xs);
    const n = Math.hypot(...xs);
    return v.map((x) => x / n);
  };

  it('links records by vector similarity or by the same fact, transitively, and leaves singletons out', () => {
    const groups = nearDuplicateGroups(
      [
        { id: 'a', vector: unit(1, 0, 0) },
        { id: 'b', vector: unit(0.99, 0.1, 0) },
        { id: 'c', vector: unit(0, 1, 0), factKey: 'acme\u001frenewal\u001fmarch' },
        { id: 'd', vector: unit(0, 0, 1), factKey: 'acme\u001frenewal\u001fmarch' },
        { id: 'e', vector: unit(0.7, 0.7, 0) },
      ],
      0.95,
    );
    expect(groups).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
  });
  it('compares a record still waiting for its vector by fact only, never by vector', () => {
    const groups = nearDuplicateGroups(
      [
        { id: 'a', vector: unit(1, 0, 0) },
        { id: 'pending' },
        { id: 'b', vector: unit(0.99, 0.1, 0) },
        { id: 'f1', factKey: 'acme\u001frenewal\u001fmarch' },
        { id: 'f2', vector: unit(0, 0, 1), factKey: 'acme\u001frenewal\u001fmarch' },
      ],
      0.95,
    );
    expect(groups).toEqual([
      ['a', 'b'],
      ['f1', 'f2'],
    ]);
  });
});
