import { describe, expect, it } from 'vitest';
import { makeRecord } from '../testing';
import { DEFAULT_TEXT_ANALYSIS, documentAnalysisCode, documentTerms, queryTerms, type TextAnalysis } from './analysis';
import { dateText, dateWords } from './date-words';
import { tokenize } from './tokenize';

const only = (analysis: Partial<TextAnalysis>): TextAnalysis => ({ stopWords: false, stem: false, dateWords: false, ...analysis });

describe('query stop words', () => {
  it('drops English function and question words but keeps what the question is about', () => {
    expect(queryTerms('What did Caroline research about the adoption agencies?', only({ stopWords: true }))).toEqual([
      'caroline',
      'research',
      'adoption',
      'agencies',
    ]);
  });

  it('drops Chinese particles, pronouns and question words', () => {
    expect(queryTerms('我们的交付风险是什么？', only({ stopWords: true }))).toEqual(['交付', '风险']);
  });

  it('never empties a query: one of stop words only is searched as written', () => {
    expect(queryTerms('What is it?', only({ stopWords: true }))).toEqual(['what', 'is', 'it']);
    expect(queryTerms('他们在哪里', only({ stopWords: true }))).toEqual(['他们', '在', '哪里']);
  });

  it('keeps a name or acronym that is also a stop word when it is written capitalised inside the sentence', () => {
    expect(queryTerms('When did the IT team call WHO?', only({ stopWords: true }))).toEqual(['it', 'team', 'call', 'who']);
    expect(queryTerms('What is it? It is the team.', only({ stopWords: true }))).toEqual(['team']);
  });

  it('keeps "will": it is also a name (Will), and the question words around it already carry no topic', () => {
    expect(queryTerms('When will Caroline move?', only({ stopWords: true }))).toEqual(['will', 'caroline', 'move']);
  });

  it('keeps "may": a question about the month must still reach the memory of a day in May', () => {
    expect(queryTerms('What happened in May 2023?', DEFAULT_TEXT_ANALYSIS)).toEqual(['happen', 'may', '2023']);
  });

  it('is off when not asked for', () => {
    expect(queryTerms('What is the risk?', only({}))).toEqual(['what', 'is', 'the', 'risk']);
  });
});

describe('stemming', () => {
  it('reduces English inflections to one stem, in queries as in documents', () => {
    const record = makeRecord({ content: { text: 'Melanie painted a sunrise and went running.' } });
    const terms = documentTerms(record, only({ stem: true }));
    for (const query of ['paintings', 'run', 'runs']) {
      expect(terms).toEqual(expect.arrayContaining(queryTerms(query, only({ stem: true }))));
    }
  });

  it("stems a possessive to its name, so Caroline's finds Caroline", () => {
    expect(queryTerms("Caroline's plans", only({ stem: true }))).toEqual(queryTerms('Caroline plan', only({ stem: true })));
  });

  it('leaves Chinese words and numbers as they are', () => {
    expect(queryTerms('交付风险 2023 3.5', DEFAULT_TEXT_ANALYSIS)).toEqual(['交付', '风险', '2023', '3.5']);
  });
});

describe('date words', () => {
  it('writes the day in English and Chinese, weekday included, in UTC', () => {
    expect(dateText('2023-05-08T13:56:00Z')).toBe('8 may 2023 monday\n2023年5月8日 星期一 周一');
    // 23:30 at UTC-5 is already the next day in UTC.
    expect(dateText('2023-05-07T23:30:00-05:00')).toContain('8 may 2023 monday');
  });

  it('are the words the tokenizer cuts from that text, for every day of several years', () => {
    for (let day = Date.UTC(1999, 11, 1); day < Date.UTC(2031, 0, 1); day += 86_400_000 * 3) {
      const iso = new Date(day).toISOString();
      expect(dateWords(iso)).toEqual(tokenize(dateText(iso)!));
    }
    expect(dateWords('not a date')).toEqual([]);
  });

  it("index the memory's day, so an English or a Chinese question naming it matches", () => {
    const record = makeRecord({ validFrom: '2023-05-08T13:56:00Z', content: { text: 'Caroline: I went to a support group.' } });
    const terms = documentTerms(record, DEFAULT_TEXT_ANALYSIS);
    expect(terms).toEqual(expect.arrayContaining(queryTerms('What did Caroline do on Monday, 8 May 2023?', DEFAULT_TEXT_ANALYSIS)));
    expect(terms).toEqual(expect.arrayContaining(queryTerms('2023年5月8日星期一', DEFAULT_TEXT_ANALYSIS)));
    expect(terms).toContain('carolin');
    expect(documentTerms(record, only({}))).not.toContain('monday');
  });
});

describe('document analysis code', () => {
  it('differs whenever the document terms would, and ignores query-only stop words', () => {
    const codes = new Set(
      [only({}), only({ stem: true }), only({ dateWords: true }), only({ stem: true, dateWords: true })].map(documentAnalysisCode),
    );
    expect(codes.size).toBe(4);
    expect(codes.has(0)).toBe(false);
    expect(documentAnalysisCode(only({ stopWords: true }))).toBe(documentAnalysisCode(only({})));
  });
});
