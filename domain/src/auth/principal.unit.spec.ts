import { describe, expect, it } from 'vitest';
import { Principal } from './principal';

const claims = { tenant: 'acme', sub: 'dpo-1', roles: ['dpo'] };

describe('a principal display name', () => {
  it('is taken from the name claim, trimmed, Chinese as well as Latin', () => {
    expect(Principal.parse({ ...claims, name: '  王伟 ' }).name).toBe('王伟');
    expect(Principal.parse({ ...claims, name: 'Zoë Martin' }).name).toBe('Zoë Martin');
  });

  it('that does not fit is dropped, and the token is still a valid principal', () => {
    for (const name of ['', '   ', 'x'.repeat(201), 42, { first: 'Wei' }]) {
      const parsed = Principal.safeParse({ ...claims, name });
      expect(parsed.success).toBe(true);
      expect(parsed.data?.name).toBeUndefined();
    }
  });
});
