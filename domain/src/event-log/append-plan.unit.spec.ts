import { describe, expect, it } from 'vitest';
import { DomainError, WrongExpectedVersion } from '../shared/errors';
import { NO_STREAM, planAppend } from './append-plan';

const e = (id: string) => ({ id, type: 'Noted', data: {} });
const at = (revision: bigint) => ({ revision, position: 100n + revision });

describe('planAppend', () => {
  it('writes new events that meet the expectation', () => {
    expect(planAppend('s', [e('a')], 'no_stream', NO_STREAM, [undefined])).toEqual({ kind: 'write', events: [e('a')] });
    expect(planAppend('s', [e('a')], 2n, 2n, [undefined])).toEqual({ kind: 'write', events: [e('a')] });
    expect(() => planAppend('s', [e('a')], 1n, 2n, [undefined])).toThrow(WrongExpectedVersion);
    expect(() => planAppend('s', [e('a')], 'stream_exists', NO_STREAM, [undefined])).toThrow(WrongExpectedVersion);
  });

  it('reports a retry stored exactly where its expectation put it as a duplicate', () => {
    expect(planAppend('s', [e('a'), e('b')], 0n, 5n, [at(1n), at(2n)])).toEqual({ kind: 'duplicate', revision: 2n, position: 102n });
  });

  it('refuses a retry whose events sit elsewhere', () => {
    expect(() => planAppend('s', [e('a')], 1n, 1n, [at(0n)])).toThrow(WrongExpectedVersion);
  });

  it('appends the rest of a partly stored retry', () => {
    expect(planAppend('s', [e('a'), e('b')], 0n, 1n, [at(1n), undefined])).toEqual({ kind: 'write', events: [e('b')] });
    expect(planAppend('s', [e('a'), e('b')], 'any', 7n, [at(3n), undefined])).toEqual({ kind: 'write', events: [e('b')] });
  });

  it('rejects the same id twice in one append', () => {
    expect(() => planAppend('s', [e('a'), e('a')], 'any', NO_STREAM, [undefined, undefined])).toThrow(DomainError);
  });
});
