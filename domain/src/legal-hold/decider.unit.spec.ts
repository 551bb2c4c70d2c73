import { describe, expect, it } from 'vitest';
import { given } from '../testing';
import { LegalHoldNotFound, legalHoldDecider, type LegalHoldEvent, type StoredLegalHold } from './decider';

const hold = (id: string): StoredLegalHold => ({
  scope: { projects: ['apollo'], subjectPseudonyms: [`psn_${'a'.repeat(32)}`] },
  reason: 'matter-1',
  id,
  placedBy: 'legal-1',
  placedAt: '2026-12-01T00:00:00.000Z',
});
const placed = (id: string): LegalHoldEvent => ({ type: 'LegalHoldPlaced', data: hold(id) });
const released = (id: string): LegalHoldEvent => ({
  type: 'LegalHoldReleased',
  data: { id, releasedBy: 'legal-2', releasedAt: '2026-12-02T00:00:00.000Z' },
});
const release = (id: string) => ({ type: 'ReleaseHold' as const, id, releasedBy: 'legal-2', releasedAt: '2026-12-02T00:00:00.000Z' });

describe('the legal hold decider', () => {
  it('places a hold', () => {
    expect(given(legalHoldDecider).when({ type: 'PlaceHold', hold: hold('hold_1') })).toEqual([placed('hold_1')]);
  });

  it('releases an active hold', () => {
    expect(given(legalHoldDecider, placed('hold_1')).when(release('hold_1'))).toEqual([released('hold_1')]);
  });

  it('refuses to release a hold that is unknown or already released', () => {
    expect(() => given(legalHoldDecider).when(release('hold_1'))).toThrow(LegalHoldNotFound);
    expect(() => given(legalHoldDecider, placed('hold_1'), released('hold_1')).when(release('hold_1'))).toThrow(LegalHoldNotFound);
  });

  it('folds into the active holds', () => {
    const state = [placed('hold_1'), placed('hold_2'), released('hold_1')].reduce(legalHoldDecider.evolve, legalHoldDecider.initialState());
    expect([...state.active.values()]).toEqual([hold('hold_2')]);
  });

  it('parses holds as stored before and after pseudonyms', () => {
    // As written before pseudonyms (the data folder's migration rewrites them) and after.
    const legacy = {
      type: 'LegalHoldPlaced',
      data: {
        scope: { subjects: ['fixture-subject-one'] },
        reason: 'matter-0001',
        id: 'hold_f9',
        placedBy: 'fixture-legal',
        placedAt: '2026-12-03T02:40:58.062Z',
      },
    };
    expect(legalHoldDecider.parse(legacy)).toEqual(legacy);
    expect(legalHoldDecider.parse(placed('hold_1'))).toEqual(placed('hold_1'));
    expect(legalHoldDecider.parse(released('hold_1'))).toEqual(released('hold_1'));
    expect(legalHoldDecider.parse({ type: 'LayoutMigrated', data: { version: 2 } })).toBeUndefined();
  });
});
