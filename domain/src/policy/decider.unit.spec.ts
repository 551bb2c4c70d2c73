import { describe, expect, it } from 'vitest';
import { ValidationFailed } from '../shared/errors';
import { given } from '../testing';
import { PolicyVersionConflict, policyDecider, type PolicyEvent } from './decider';
import { DEFAULT_POLICY, POLICY_BOUNDS } from './policy';

const { version: base, ...document } = DEFAULT_POLICY;
const changed = (version: number, overrides: Partial<typeof document> = {}): PolicyEvent => ({
  type: 'PolicyChanged',
  data: { policy: { ...document, ...overrides, version } },
});

describe('the policy decider', () => {
  it('stores the first version after the default', () => {
    expect(given(policyDecider).when({ type: 'ChangePolicy', document })).toEqual([changed(base + 1)]);
  });

  it('numbers each version one above the current one', () => {
    expect(
      given(policyDecider, changed(base + 1), changed(base + 2)).when({ type: 'ChangePolicy', document, expectedVersion: base + 2 }),
    ).toEqual([changed(base + 3)]);
  });

  it('refuses a stale expected version, naming the current one', () => {
    const when = () =>
      given(policyDecider, changed(base + 1), changed(base + 2)).when({ type: 'ChangePolicy', document, expectedVersion: base + 1 });
    expect(when).toThrow(PolicyVersionConflict);
    expect(when).toThrow(`expected policy version ${base + 1}, but it is ${base + 2}`);
  });

  it('refuses a document that is not a policy', () => {
    expect(() => given(policyDecider).when({ type: 'ChangePolicy', document: { ...document, rules: 'none' } as never })).toThrow(
      ValidationFailed,
    );
  });

  it('reads stored versions as before: capped at today’s bounds, other types skipped', () => {
    const stored = {
      type: 'PolicyChanged',
      data: JSON.parse(JSON.stringify({ policy: { ...document, version: 4, erasure: { ...document.erasure, approvalThreshold: 1e15 } } })),
    };
    const parsed = policyDecider.parse(stored);
    expect(parsed?.data.policy.version).toBe(4);
    expect(parsed?.data.policy.erasure.approvalThreshold).toBe(POLICY_BOUNDS.approvalThreshold.max);
    expect(policyDecider.parse({ type: 'PolicyNoted', data: {} })).toBeUndefined();
  });
});
