import { describe, expect, it } from 'vitest';
import { BUILT_IN_ROLES } from './principal';
import { ROLES } from './roles';

describe('ROLES', () => {
  it('names exactly the built-in roles', () => {
    const named = new Set(Object.values(ROLES).flatMap((r): readonly string[] => (typeof r === 'string' ? [r] : r)));
    expect([...named].sort()).toEqual([...BUILT_IN_ROLES].sort());
  });
});
