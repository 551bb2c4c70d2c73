import { describe, expect, it } from 'vitest';
import { BUILT_IN_ROLES, DEFAULT_POLICY, unknownRoles } from '@elma/domain';
import { CORRECTOR_ROLES, ERASURE_ROLES } from '@elma/application';

describe('the built-in roles', () => {
  it('include every role the default policy and the services check', () => {
    const checked = [
      ...DEFAULT_POLICY.rules.flatMap((rule) => rule.when.roles ?? []),
      ...CORRECTOR_ROLES,
      ...ERASURE_ROLES,
      // Legal holds and the held-record exemption, policy administration, audit export, erasure approval and status.
      'legal',
      'admin',
      'auditor',
      'dpo',
      // Tenant off-boarding (request and four-eyes approval), in a token of the platform tenant.
      'platform-admin',
    ];
    expect(unknownRoles(checked)).toEqual([]);
    expect([...BUILT_IN_ROLES].sort()).toEqual([...new Set(checked)].sort());
  });

  it('are extended, per tenant, by the roles its policy names', () => {
    const policy = { rules: [{ when: { roles: ['night-shift'] } }, { when: {} }] };
    expect(unknownRoles(['agent', 'night-shift', 'superuser', 'superuser'], policy)).toEqual(['superuser']);
    expect(unknownRoles(['night-shift'])).toEqual(['night-shift']);
  });
});
