import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { expiryOf } from '../ingest/hygiene';
import { Principal } from '../auth/principal';
import { compileRead, matchesClauses } from './compile';
import { evaluate } from './evaluate';
import { makeRecord } from '../testing';
import {
  DEFAULT_POLICY,
  POLICY_BOUNDS,
  PolicyDocument,
  resourceOf,
  storedPolicy,
  subjectOf,
  TenantPolicy,
  type PolicyEnv,
  type PolicySubject,
} from './policy';

const NOW = '2025-01-01T00:00:00.000Z';
const agent: PolicySubject = { user: 'agent-7', roles: ['agent'], clearance: 'restricted' };
const forPurpose = (purpose?: string): PolicyEnv => ({ now: NOW, ...(purpose && { purpose }) });

/** Both paths of a read decision must agree; the tests check them together. */
function canRead(subject: PolicySubject, record = makeRecord(), env = forPurpose('support'), policy: TenantPolicy = DEFAULT_POLICY) {
  const decision = evaluate(policy, subject, resourceOf(record), env, 'read');
  expect(matchesClauses(record, compileRead(policy, subject, env))).toBe(decision.allowed);
  return decision;
}

describe('the default policy', () => {
  it('recalls a support record for support', () => {
    const record = makeRecord({ policy: { purposes: ['support'], sensitivity: 'confidential' } });
    expect(canRead(agent, record, forPurpose('support'))).toEqual({ allowed: true, ruleId: 'read-up-to-confidential' });
  });

  it('does not recall a support record for a performance review (purpose limitation)', () => {
    const record = makeRecord({ policy: { purposes: ['support'] } });
    expect(canRead(agent, record, forPurpose('performance_review'))).toEqual({ allowed: false, ruleId: 'default-deny' });
  });

  it('recalls nothing for a call that declares no purpose', () => {
    expect(canRead(agent, makeRecord(), forPurpose()).allowed).toBe(false);
    expect(compileRead(DEFAULT_POLICY, agent, forPurpose())).toEqual([]);
  });

  it('does not recall superseded or deleted records', () => {
    expect(canRead(agent, makeRecord({ status: 'superseded' })).allowed).toBe(false);
    expect(canRead(agent, makeRecord({ status: 'deleted' })).allowed).toBe(false);
    expect(canRead(agent, makeRecord({ status: 'disputed' })).allowed).toBe(true);
  });

  describe('given a restricted record owned by alice', () => {
    const record = makeRecord({ policy: { owner: 'alice', sensitivity: 'restricted' } });

    it('alice may recall it', () => {
      expect(canRead({ user: 'alice', roles: [], clearance: 'restricted' }, record)).toEqual({
        allowed: true,
        ruleId: 'read-restricted-own',
      });
    });

    it('the DPO and legal may recall it', () => {
      expect(canRead({ user: 'dora', roles: ['dpo'], clearance: 'restricted' }, record)).toEqual({
        allowed: true,
        ruleId: 'read-restricted-privacy',
      });
      expect(canRead({ user: 'lee', roles: ['legal'], clearance: 'restricted' }, record).allowed).toBe(true);
    });

    it('an agent or an admin with full clearance may not', () => {
      expect(canRead(agent, record).allowed).toBe(false);
      expect(canRead({ user: 'root', roles: ['admin'], clearance: 'restricted' }, record).allowed).toBe(false);
    });

    it('even alice may not recall it above her clearance', () => {
      expect(canRead({ user: 'alice', roles: ['dpo'], clearance: 'confidential' }, record)).toEqual({
        allowed: false,
        ruleId: 'default-deny',
      });
    });
  });

  it('caps reads at the caller’s clearance', () => {
    const confidential = makeRecord({ policy: { sensitivity: 'confidential' } });
    const subject: PolicySubject = { user: 'bob', roles: ['agent'], clearance: 'internal' };
    expect(canRead(subject, confidential).allowed).toBe(false);
    expect(canRead(subject, makeRecord({ policy: { sensitivity: 'internal' } })).allowed).toBe(true);
    expect(compileRead(DEFAULT_POLICY, subject, forPurpose('support')).map((c) => c.maxSensitivity)).toEqual(['internal', 'internal']);
  });

  it('lets only admins administer the tenant', () => {
    const env = forPurpose();
    expect(evaluate(DEFAULT_POLICY, { user: 'root', roles: ['admin'], clearance: 'internal' }, null, env, 'administer')).toEqual({
      allowed: true,
      ruleId: 'administer-admin',
    });
    expect(evaluate(DEFAULT_POLICY, { ...agent, roles: ['agent', 'dpo', 'auditor'] }, null, env, 'administer').allowed).toBe(false);
  });

  it('lets writers record at any sensitivity and nobody else write', () => {
    const write = (subject: PolicySubject, owner: string, sensitivity: 'confidential' | 'restricted') =>
      evaluate(
        DEFAULT_POLICY,
        subject,
        resourceOf(makeRecord({ policy: { owner, sensitivity, purposes: ['billing'] } })),
        forPurpose('support'),
        'write',
      );
    expect(write(agent, 'carol', 'confidential').allowed).toBe(true);
    expect(write(agent, 'carol', 'restricted')).toEqual({ allowed: true, ruleId: 'write-by-writers' });
    expect(write({ user: 'root', roles: ['admin'], clearance: 'internal' }, 'carol', 'restricted')).toEqual({
      allowed: true,
      ruleId: 'write-by-writers',
    });
    expect(write({ user: 'viewer', roles: ['viewer'], clearance: 'restricted' }, 'viewer', 'confidential').allowed).toBe(false);
  });

  it('lets auditors export and compliance or the DPO erase', () => {
    const env = forPurpose();
    const subject = (roles: string[]): PolicySubject => ({ user: 'x', roles, clearance: 'internal' });
    expect(evaluate(DEFAULT_POLICY, subject(['auditor']), null, env, 'export').allowed).toBe(true);
    expect(evaluate(DEFAULT_POLICY, subject(['admin']), null, env, 'export').allowed).toBe(false);
    expect(evaluate(DEFAULT_POLICY, subject(['compliance']), resourceOf(makeRecord()), env, 'erase').allowed).toBe(true);
    expect(evaluate(DEFAULT_POLICY, subject(['agent']), resourceOf(makeRecord()), env, 'erase').allowed).toBe(false);
  });
});

describe('a policy without rules', () => {
  const empty = TenantPolicy.parse({ version: 3, rules: [] });

  it('denies every operation', () => {
    const admin: PolicySubject = { user: 'root', roles: ['admin', 'dpo', 'auditor'], clearance: 'restricted' };
    for (const op of ['read', 'write', 'export', 'erase', 'administer'] as const) {
      expect(evaluate(empty, admin, resourceOf(makeRecord()), forPurpose('support'), op)).toEqual({
        allowed: false,
        ruleId: 'default-deny',
      });
    }
    expect(compileRead(empty, admin, forPurpose('support'))).toEqual([]);
  });

  it('gets the documented defaults for everything else', () => {
    expect(empty).toEqual({
      version: 3,
      rules: [],
      secrets: { mode: 'reject' },
      retentionDays: { session: 1, standard: 365, long_term: 3650 },
      erasure: { approvalThreshold: 100, approvalTimeoutHours: 168, tombstoneScope: 'subject', worksetRetentionDays: 30 },
      subjectAccess: { selfService: false },
      authoritativeSources: [],
      sensitivityKeywords: { confidential: [], restricted: [] },
      reviews: { windowMinutes: 10, maxEventsPerSource: 300, maxFactsPerKey: 5 },
    });
  });
});

describe('rules that depend on the caller’s project and channel', () => {
  const policy = TenantPolicy.parse({
    version: 1,
    rules: [{ id: 'project-team', operations: ['read'], when: { sameProject: true, channels: ['chat'], crossPurpose: true } }],
  });
  const record = makeRecord({ policy: { project: 'falcon', purposes: [] } });

  it('admits a record of the caller’s project, through the named channel, for any purpose', () => {
    const member: PolicySubject = { user: 'u', roles: [], project: 'falcon', clearance: 'internal' };
    expect(canRead(member, record, { now: NOW, channel: 'chat' }, policy).allowed).toBe(true);
    expect(canRead(member, record, { now: NOW, channel: 'api' }, policy).allowed).toBe(false);
    expect(compileRead(policy, member, { now: NOW, channel: 'chat' })).toEqual([
      { ruleId: 'project-team', maxSensitivity: 'internal', project: 'falcon' },
    ]);
  });

  it('admits nothing to a caller without a project', () => {
    const outsider: PolicySubject = { user: 'u', roles: [], clearance: 'internal' };
    expect(canRead(outsider, record, { now: NOW, channel: 'chat' }, policy).allowed).toBe(false);
    expect(compileRead(policy, outsider, { now: NOW, channel: 'chat' })).toEqual([]);
  });
});

describe('policy documents', () => {
  it('reject duplicate rule ids, the reserved deny id, unknown fields and empty operations', () => {
    const rule = { id: 'r', operations: ['read'] };
    expect(PolicyDocument.safeParse({ rules: [rule, rule] }).success).toBe(false);
    expect(PolicyDocument.safeParse({ rules: [{ ...rule, id: 'default-deny' }] }).success).toBe(false);
    expect(PolicyDocument.safeParse({ rules: [{ ...rule, when: { role: ['admin'] } }] }).success).toBe(false);
    expect(PolicyDocument.safeParse({ rules: [{ ...rule, operations: [] }] }).success).toBe(false);
    expect(PolicyDocument.safeParse({ version: 2, rules: [rule] }).success).toBe(false);
    expect(PolicyDocument.parse({ rules: [rule] }).rules[0].when).toEqual({});
  });

  it('cap a policy at 500 rules', () => {
    const rules = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r-${i}`, operations: ['read'] }));
    expect(PolicyDocument.safeParse({ rules: rules(500) }).success).toBe(true);
    expect(PolicyDocument.safeParse({ rules: rules(501) }).success).toBe(false);
  });
});

describe('a subject from a verified principal', () => {
  it('carries the token’s user, roles, clearance and ABAC claims', () => {
    const principal = Principal.parse({
      tenant: 'acme',
      sub: 'alice',
      roles: ['agent'],
      clearance: 'confidential',
      project: 'falcon',
      department: 'sales',
    });
    expect(subjectOf(principal)).toEqual({
      user: 'alice',
      roles: ['agent'],
      clearance: 'confidential',
      project: 'falcon',
      department: 'sales',
    });
  });
});

describe('the bounds of a policy’s numbers', () => {
  const { version: _v, ...document } = DEFAULT_POLICY;
  const issuesOf = (body: unknown) => {
    const result = PolicyDocument.safeParse(body);
    return result.success ? [] : result.error.issues.map((i) => i.path.join('.'));
  };

  it('refuse retention no date can hold, an endless approval threshold, and name the field', () => {
    expect(issuesOf({ ...document, retentionDays: { ...document.retentionDays, standard: 1e8 } })).toEqual(['retentionDays.standard']);
    expect(issuesOf({ ...document, retentionDays: { ...document.retentionDays, long_term: 36_501 } })).toEqual(['retentionDays.long_term']);
    expect(issuesOf({ ...document, retentionDays: { ...document.retentionDays, session: 0 } })).toEqual(['retentionDays.session']);
    expect(issuesOf({ ...document, erasure: { ...document.erasure, approvalThreshold: 1e12 } })).toEqual(['erasure.approvalThreshold']);
  });

  it('keep every expiry a valid timestamp for any retention within them, written any time this century', () => {
    fc.assert(
      fc.property(
        fc.double({ min: Number.MIN_VALUE, max: POLICY_BOUNDS.retentionDays.max, noNaN: true }),
        fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true }),
        (days, recordedAt) => {
          const policy = TenantPolicy.parse({ ...DEFAULT_POLICY, retentionDays: { ...DEFAULT_POLICY.retentionDays, standard: days } });
          const expiry = expiryOf('standard', recordedAt.toISOString(), policy);
          expect(z.iso.datetime({ offset: true }).safeParse(expiry).success).toBe(true);
        },
      ),
    );
  });

  it('a policy stored before the bounds is read clamped to them', () => {
    const stored = {
      ...DEFAULT_POLICY,
      retentionDays: { session: 0.00003, standard: 1e8, long_term: 3650 },
      erasure: { approvalThreshold: 1e12, approvalTimeoutHours: 168 },
    };
    const policy = storedPolicy(stored);
    expect(policy.retentionDays).toEqual({ session: 0.00003, standard: 36_500, long_term: 3650 });
    expect(policy.erasure.approvalThreshold).toBe(POLICY_BOUNDS.approvalThreshold.max);
    expect(storedPolicy(DEFAULT_POLICY)).toEqual(DEFAULT_POLICY);
    // A policy stored before review thresholds existed reads with their defaults.
    const { reviews: _reviews, ...older } = DEFAULT_POLICY;
    expect(storedPolicy(older).reviews).toEqual({ windowMinutes: 10, maxEventsPerSource: 300, maxFactsPerKey: 5 });
  });
});
