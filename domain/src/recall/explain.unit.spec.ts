import { describe, expect, it } from 'vitest';
import { makeRecord } from '../testing';
import { explainCandidate, type RecallCandidate } from './explain';

const hit = (fields: Partial<RecallCandidate>): RecallCandidate => ({ record: makeRecord({ id: 'm' }), score: 0.5, ...fields });
const everyone = () => true;

describe('why a recalled memory is there', () => {
  it('a hit of both routes carries each route’s contribution and the lift smoothing gave it', () => {
    const explained = explainCandidate(
      hit({ score: 0.9, bm25Rank: 1, vectorRank: 3, contributions: { bm25: 0.5, dense: 0.3 }, smoothing: { lift: 0.1, neighbourOf: 'n' } }),
      everyone,
    );
    expect(explained).toEqual({ scores: { bm25: 0.5, dense: 0.3, smoothing: 0.1 }, reason: { route: 'both' } });
  });

  it('a hit of one route has no part from the other', () => {
    expect(explainCandidate(hit({ bm25Rank: 2, contributions: { bm25: 0.5 } }), everyone)).toEqual({
      scores: { bm25: 0.5 },
      reason: { route: 'bm25' },
    });
    expect(explainCandidate(hit({ vectorRank: 1, contributions: { dense: 0.5 } }), everyone).reason).toEqual({ route: 'dense' });
  });

  it('a neighbour that joined by smoothing alone names the hit that lent it its score', () => {
    const explained = explainCandidate(hit({ score: 0.4, smoothing: { lift: 0.4, neighbourOf: 'question' } }), everyone);
    expect(explained).toEqual({ scores: { smoothing: 0.4 }, reason: { route: 'neighbour', neighbourOf: 'question' } });
  });

  it('a hit of an index that reports no routes (fused on its server) is not taken for a neighbour', () => {
    expect(explainCandidate(hit({ score: 0.6, smoothing: { lift: 0.1, neighbourOf: 'n' } }), everyone).reason).toEqual({ route: 'both' });
  });

  it('never names a lender the caller may not see', () => {
    const explained = explainCandidate(hit({ score: 0.4, smoothing: { lift: 0.4, neighbourOf: 'hidden' } }), (id) => id !== 'hidden');
    expect(explained.reason).toEqual({ route: 'neighbour' });
  });

  it('an edge reached by following relations says at which entity and how many hops out', () => {
    const explained = explainCandidate(hit({ score: 0.25, hop: 2, entity: { type: 'team', id: 'finance' } }), everyone);
    expect(explained).toEqual({ scores: { hop: 0.25 }, reason: { route: 'hop', hop: 2, fromEntity: 'finance' } });
  });
  it('a memory an evidence step found says so, naming the hit it was found near only when the caller may see it', () => {
    const expanded = hit({ score: 0.3, via: { route: 'expansion', fromId: 'seen', similarity: 0.8 } });
    expect(explainCandidate(expanded, everyone)).toEqual({ scores: {}, reason: { route: 'expansion', neighbourOf: 'seen' } });
    expect(explainCandidate(expanded, () => false).reason).toEqual({ route: 'expansion' });
    const lifted = hit({
      bm25Rank: 1,
      contributions: { bm25: 0.5 },
      smoothing: { lift: 0.1, neighbourOf: 'n' },
      via: { route: 'conversation', lift: 0.2 },
    });
    expect(explainCandidate(lifted, everyone).scores).toEqual({ bm25: 0.5, smoothing: 0.1 + 0.2 });
  });
  it('a neighbour lifted by its conversation too is still a neighbour, its score all lent', () => {
    const explained = explainCandidate(
      hit({ score: 0.5, smoothing: { lift: 0.4, neighbourOf: 'question' }, via: { route: 'conversation', lift: 0.1 } }),
      everyone,
    );
    expect(explained).toEqual({ scores: { smoothing: 0.5 }, reason: { route: 'neighbour', neighbourOf: 'question' } });
  });
});
