import { describe, expect, it } from 'vitest';
import { given } from '../testing';
import { tombstoneDecider, type TombstoneEvent } from './tombstone-decider';

const written = (requestId: string, fingerprints: string[]): TombstoneEvent => ({
  type: 'TombstonesWritten',
  data: { requestId, fingerprints },
});

describe('the tombstone decider', () => {
  it('writes a request’s fingerprints once, deduplicated and sorted', () => {
    expect(given(tombstoneDecider).when({ type: 'WriteTombstones', requestId: 'era_1', fingerprints: ['c', 'a', 'c'] })).toEqual([
      written('era_1', ['a', 'c']),
    ]);
  });

  it('writes nothing again for the same request, nor for no fingerprints', () => {
    expect(
      given(tombstoneDecider, written('era_1', ['a'])).when({ type: 'WriteTombstones', requestId: 'era_1', fingerprints: ['b'] }),
    ).toEqual([]);
    expect(given(tombstoneDecider).when({ type: 'WriteTombstones', requestId: 'era_2', fingerprints: [] })).toEqual([]);
  });

  it('writes another request’s fingerprints after the first', () => {
    expect(
      given(tombstoneDecider, written('era_1', ['a'])).when({ type: 'WriteTombstones', requestId: 'era_2', fingerprints: ['a'] }),
    ).toEqual([written('era_2', ['a'])]);
  });

  it('parses the events as stored', () => {
    const stored = { type: 'TombstonesWritten', data: { requestId: 'era_1', fingerprints: ['ab', 'cd'] } };
    expect(tombstoneDecider.parse(stored)).toEqual(stored);
    expect(() => tombstoneDecider.parse({ type: 'TombstonesWritten', data: { requestId: 'era_1' } })).toThrow();
  });
});
