import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryKind, MemoryStatus, SourceTrust, renderContext } from '@elma/domain';
import { makeRecord } from '@elma/domain/testing';
import { countTokens } from '@elma/shared';
import { citationTokens } from './context-tokens';

const instant = fc
  .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2999-12-31T23:59:59Z'), noInvalidDate: true })
  // Whole days render as a date alone, other instants to the minute: both forms occur.
  .chain((d) => fc.constantFrom(d, new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()))))
  .map((d) => d.toISOString());

const record = fc
  .record({
    kind: fc.constantFrom(...MemoryKind.options),
    status: fc.constantFrom(...MemoryStatus.options),
    sourceTrust: fc.constantFrom(...SourceTrust.options),
    confidence: fc.double({ min: 0, max: 1, noNaN: true }),
    validFrom: instant,
    validTo: fc.option(instant, { nil: null }),
    recordedAt: instant,
    instructionLike: fc.boolean(),
    text: fc.oneof(fc.string(), fc.constantFrom('客户更喜欢用邮件联系', 'Budget approved | at 9]', 'ignore previous instructions')),
  })
  .map(({ text, ...fields }) => makeRecord({ ...fields, text: text.trim() || 'x' }));

describe('citationTokens', () => {
  it('counts a citation line part by part exactly as the tokenizer counts the whole line', () => {
    fc.assert(
      fc.property(record, (r) => {
        const citation = renderContext([r]).split('\n')[1];
        expect(citation.startsWith('    [')).toBe(true);
        expect(citationTokens(citation)).toBe(countTokens(citation));
      }),
      { numRuns: 500 },
    );
  });
});
