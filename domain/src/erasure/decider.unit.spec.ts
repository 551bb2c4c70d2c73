import { describe, expect, it } from 'vitest';
import { given, makeCertificate } from '../testing';
import { ERASURE_EVENT_TYPES, erasureDecider, erasureSteps, type ErasureEvent } from './decider';
import { ErasureNotFound, type StepRecord } from './erasure';

const sealed = (ct: string) => ({ v: 1 as const, alg: 'A256GCM' as const, iv: 'aXY=', tag: 'dGFn', ct });
const request = {
  requestId: 'era_1',
  tenant: 'acme',
  reason: 'subject_request' as const,
  requestedBy: { sub: 'dpo-1', roles: ['dpo'], clearance: 'restricted' as const },
  requestedAt: '2026-12-01T00:00:00.000Z',
};
const requested: ErasureEvent = { type: 'ErasureRequested', data: { ...request, scope: sealed('c2NvcGU=') } };
const step = (name: StepRecord['step'], finishedAt = '2026-12-01T00:00:02.000Z'): StepRecord => ({
  step: name,
  startedAt: '2026-12-01T00:00:01.000Z',
  finishedAt,
  attempts: 1,
  counts: { n: 1 },
});
const signed = { certificate: makeCertificate({ keyId: 'k1' }), signature: { alg: 'EdDSA' as const, kid: 'k1', value: 'c2ln' } };

describe('the erasure decider', () => {
  it('records a request once; a repeat decides nothing', () => {
    expect(given(erasureDecider).when({ type: 'RequestErasure', request, scope: sealed('c2NvcGU=') })).toEqual([requested]);
    expect(given(erasureDecider, requested).when({ type: 'RequestErasure', request, scope: sealed('b3RoZXI=') })).toEqual([]);
  });

  it('refuses every other fact for a request that was never stored', () => {
    expect(() => given(erasureDecider).when({ type: 'CompleteStep', requestId: 'era_1', record: step('authorize') })).toThrow(
      ErasureNotFound,
    );
    expect(() =>
      given(erasureDecider).when({ type: 'Abandon', requestId: 'era_1', abandonment: { outcome: 'ERASURE.FAILED', at: 'x' } }),
    ).toThrow(ErasureNotFound);
  });

  it('records each step once; the first record of a step wins', () => {
    const done: ErasureEvent = { type: 'ErasureStepCompleted', data: step('authorize') };
    expect(given(erasureDecider, requested).when({ type: 'CompleteStep', requestId: 'era_1', record: step('authorize') })).toEqual([done]);
    expect(
      given(erasureDecider, requested, done).when({ type: 'CompleteStep', requestId: 'era_1', record: step('authorize', 'later') }),
    ).toEqual([]);
    expect(given(erasureDecider, requested, done).when({ type: 'CompleteStep', requestId: 'era_1', record: step('locate') })).toEqual([
      { type: 'ErasureStepCompleted', data: step('locate') },
    ]);
  });

  it('captures the workset, closes the audit, certifies and abandons once each', () => {
    const workset: ErasureEvent = { type: 'ErasureWorksetCaptured', data: { workset: sealed('d29ya3NldA==') } };
    const anchor: ErasureEvent = { type: 'ErasureAuditClosed', data: { seq: 3, hash: 'h' } };
    const certified: ErasureEvent = { type: 'ErasureCertified', data: signed };
    const abandoned: ErasureEvent = { type: 'ErasureAbandoned', data: { outcome: 'ERASURE.FAILED', at: '2026-12-01T00:01:00.000Z' } };
    expect(given(erasureDecider, requested).when({ type: 'CaptureWorkset', requestId: 'era_1', workset: workset.data.workset })).toEqual([
      workset,
    ]);
    expect(given(erasureDecider, requested, workset).when({ type: 'CaptureWorkset', requestId: 'era_1', workset: sealed('bmV3') })).toEqual(
      [],
    );
    expect(given(erasureDecider, requested).when({ type: 'CloseAudit', requestId: 'era_1', anchor: { seq: 3, hash: 'h' } })).toEqual([
      anchor,
    ]);
    expect(
      given(erasureDecider, requested, anchor).when({ type: 'CloseAudit', requestId: 'era_1', anchor: { seq: 4, hash: 'i' } }),
    ).toEqual([]);
    expect(given(erasureDecider, requested).when({ type: 'Certify', requestId: 'era_1', certificate: signed })).toEqual([certified]);
    expect(given(erasureDecider, requested, certified).when({ type: 'Certify', requestId: 'era_1', certificate: signed })).toEqual([]);
    expect(given(erasureDecider, requested).when({ type: 'Abandon', requestId: 'era_1', abandonment: abandoned.data })).toEqual([
      abandoned,
    ]);
    expect(
      given(erasureDecider, requested, abandoned).when({
        type: 'Abandon',
        requestId: 'era_1',
        abandonment: { outcome: 'X.Y', at: 'later' },
      }),
    ).toEqual([]);
  });

  it('folds the stream into the request, sealed parts, steps in order and the end', () => {
    const events: ErasureEvent[] = [
      requested,
      { type: 'ErasureStepCompleted', data: step('authorize') },
      { type: 'ErasureStepCompleted', data: step('locate') },
      { type: 'ErasureStepCompleted', data: step('authorize', 'a retry') },
      { type: 'ErasureCertified', data: signed },
    ];
    const state = events.reduce(erasureDecider.evolve, erasureDecider.initialState());
    expect(state.request).toEqual(request);
    expect(state.sealedScope).toEqual(sealed('c2NvcGU='));
    expect([...erasureSteps(state).values()]).toEqual([step('authorize'), step('locate')]);
    expect(state.certificate).toEqual(signed);
    expect(state.abandonment).toBeNull();
  });

  it('parses the events as the store has always written them, and skips types it does not know', () => {
    // Payloads as ErasureStore wrote them before the decider (JSON as stored).
    const stored = [
      { type: 'ErasureRequested', data: JSON.parse(JSON.stringify({ ...request, scope: sealed('c2NvcGU=') })) },
      { type: 'ErasureWorksetCaptured', data: { workset: sealed('d29ya3NldA==') } },
      {
        type: 'ErasureStepCompleted',
        data: { step: 'closure', startedAt: 's', finishedAt: 'f', attempts: 2, counts: { records: 3, events: 1 } },
      },
      { type: 'ErasureAuditClosed', data: { seq: 12, hash: 'ab' } },
      { type: 'ErasureCertified', data: JSON.parse(JSON.stringify(signed)) },
      { type: 'ErasureAbandoned', data: { outcome: 'ERASURE.APPROVAL_TIMEOUT', at: '2026-12-01T00:01:00.000Z' } },
      { type: 'ErasureApproverNamed', data: { sub: 'dpo-2', name: '王伟' } },
    ];
    expect(stored.map((e) => erasureDecider.parse(e))).toEqual(stored);
    expect(Object.values(ERASURE_EVENT_TYPES).sort()).toEqual(stored.map((e) => e.type).sort());
    expect(erasureDecider.parse({ type: 'SomethingElse', data: {} })).toBeUndefined();
    expect(() => erasureDecider.parse({ type: 'ErasureStepCompleted', data: { step: 'nope' } })).toThrow();
  });
});
