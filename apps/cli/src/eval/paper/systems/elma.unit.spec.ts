import { describe, expect, it } from 'vitest';
import type { RecallItem } from '@elma/domain';
import { markOf } from './elma';

const item = (citation: Partial<RecallItem['citation']> = {}): RecallItem => ({
  id: 'mem_1',
  rank: 1,
  kind: 'semantic',
  text: 'Ana plan: Basic',
  score: 1,
  scores: { bm25: 1 },
  utility: 1,
  reason: { route: 'bm25' },
  tokens: 5,
  citation: {
    id: 'mem_1',
    version: 1,
    kind: 'semantic',
    sourceEventIds: [],
    validFrom: '2026-03-01T00:00:00.000Z',
    validTo: null,
    recordedAt: '2026-03-01T00:00:00.000Z',
    confidence: 0.9,
    sourceTrust: 'user',
    disputed: false,
    instructionLike: false,
    ...citation,
  },
});

describe('how a packed item is presented', () => {
  const asked = '2026-03-05T00:00:00.000Z';

  it('is current while valid at the asked time, history once its validity ended by then', () => {
    expect(markOf(item(), asked)).toBe('current');
    expect(markOf(item({ validTo: '2026-03-06T00:00:00.000Z' }), asked)).toBe('current');
    expect(markOf(item({ validTo: asked }), asked)).toBe('history');
  });

  it('is disputed when its citation says so, and quoted when flagged instruction-like, before anything else', () => {
    expect(markOf(item({ disputed: true, validTo: asked }), asked)).toBe('disputed');
    expect(markOf(item({ instructionLike: true, disputed: true }), asked)).toBe('quoted');
    expect(markOf(item({ instructionLike: false }), asked)).toBe('current');
  });
});
