import { describe, expect, it } from 'vitest';
import { TENANT_ID_PATTERN as DOMAIN_TENANT_ID_PATTERN } from '@elma/domain';
import { TENANT_ID_PATTERN } from './messages';

describe('the workflows’ copy of the tenant-name rule', () => {
  it('is the domain’s rule (repeated only to keep the domain out of the workflow sandbox)', () => {
    expect(TENANT_ID_PATTERN.source).toBe(DOMAIN_TENANT_ID_PATTERN.source);
    expect(TENANT_ID_PATTERN.flags).toBe(DOMAIN_TENANT_ID_PATTERN.flags);
  });
});
