import { describe, expect, it } from 'vitest';
import { CreateOffboardRequest, evolveOffboard, initialOffboardState, offboardStatus, type OffboardEvent } from './offboarding';

const at = '2026-12-03T10:00:00.000Z';
const requested: OffboardEvent = {
  type: 'OffboardingRequested',
  requestId: 'off_1',
  tenant: 'acme',
  reason: 'contract_ended',
  export: false,
  requestedBy: 'ops-1',
  requestedAt: at,
};
const fold = (events: OffboardEvent[]) => events.reduce(evolveOffboard, initialOffboardState());
const step = (name: 'seal' | 'export', counts: Record<string, number>): OffboardEvent => ({
  type: 'OffboardingStepCompleted',
  step: name,
  startedAt: at,
  finishedAt: at,
  attempts: 1,
  counts,
});

describe('an off-boarding, as its stream folds', () => {
  it('given a request only, then it awaits approval', () => {
    expect(offboardStatus(fold([requested]))).toBe('awaiting_approval');
  });

  it('given an approval, then it runs until certified', () => {
    const approved = fold([requested, { type: 'OffboardingApproved', approvedBy: 'ops-2', approvedAt: at }]);
    expect(offboardStatus(approved)).toBe('running');
    expect(offboardStatus(evolveOffboard(approved, { type: 'OffboardingCertified', signed: {}, at }))).toBe('completed');
  });

  it('given a step recorded twice (a retried activity), then the first record stands', () => {
    const state = fold([requested, step('export', { records: 3 }), step('export', { records: 0 })]);
    expect(state.steps.get('export')?.counts).toEqual({ records: 3 });
  });

  it('given a hold found by the workflow, then it ends blocked, otherwise failed', () => {
    expect(offboardStatus(fold([requested, { type: 'OffboardingFailed', code: 'OFFBOARD.BLOCKED_BY_LEGAL_HOLD', at }]))).toBe(
      'blocked_by_legal_hold',
    );
    expect(offboardStatus(fold([requested, { type: 'OffboardingFailed', code: 'OFFBOARD.VERIFICATION_FAILED', at }]))).toBe('failed');
  });

  it('a request names a reason from the list and nothing else (no free text to carry a name)', () => {
    expect(CreateOffboardRequest.parse({ reason: 'customer_request' })).toEqual({ reason: 'customer_request', export: false });
    expect(CreateOffboardRequest.safeParse({ reason: 'Mr Smith asked' }).success).toBe(false);
    expect(CreateOffboardRequest.safeParse({ reason: 'customer_request', note: 'x' }).success).toBe(false);
  });
});
