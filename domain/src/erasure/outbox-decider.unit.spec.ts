import { describe, expect, it } from 'vitest';
import { given } from '../testing';
import { erasureOutboxDecider, type ErasureOutboxEvent } from './outbox-decider';

const entry = { tenant: 'acme', requestId: 'era_1', reason: 'subject_request' as const };
const queued: ErasureOutboxEvent = { type: 'ErasureStartQueued', data: entry };
const started: ErasureOutboxEvent = { type: 'ErasureStarted', data: { tenant: 'acme', requestId: 'era_1' } };
const pending = (...events: ErasureOutboxEvent[]) => [
  ...events.reduce(erasureOutboxDecider.evolve, erasureOutboxDecider.initialState()).pending.values(),
];

describe('the erasure outbox decider', () => {
  it('queues a start and marks it started', () => {
    expect(given(erasureOutboxDecider).when({ type: 'QueueStart', entry })).toEqual([queued]);
    expect(given(erasureOutboxDecider, queued).when({ type: 'MarkStarted', tenant: 'acme', requestId: 'era_1' })).toEqual([started]);
  });

  it('lists what is queued and not started, in order', () => {
    const other = { ...entry, requestId: 'era_2' };
    expect(pending(queued, { type: 'ErasureStartQueued', data: other })).toEqual([entry, other]);
    expect(pending(queued, started)).toEqual([]);
  });

  it('parses entries as stored and skips one that does not parse', () => {
    expect(erasureOutboxDecider.parse(queued)).toEqual(queued);
    expect(erasureOutboxDecider.parse(started)).toEqual(started);
    expect(
      erasureOutboxDecider.parse({ type: 'ErasureStartQueued', data: { tenant: 'acme', requestId: 'era_3', reason: 'whim' } }),
    ).toBeUndefined();
    expect(erasureOutboxDecider.parse({ type: 'Other', data: {} })).toBeUndefined();
  });
});
