import { describe, expect, it } from 'vitest';
import { PromoteMemoryRequest, RecallFeedback, ValidationFailed } from '@elma/domain';
import { ZodBody } from './zod-body';

describe('ZodBody', () => {
  it('hands on the parsed DTO, defaults filled in', () => {
    expect(new ZodBody(PromoteMemoryRequest, {}).transform({ session: 's1' })).toMatchObject({
      session: 's1',
      kind: 'semantic',
      retention: 'standard',
    });
  });

  it('takes an absent or null body as the given stand-in', () => {
    const pipe = new ZodBody(PromoteMemoryRequest, {});
    expect(pipe.transform(undefined)).toEqual(pipe.transform({}));
    expect(pipe.transform(null)).toEqual(pipe.transform({}));
  });

  it('refuses a bad body as the services do: REQUEST.VALIDATION_FAILED with the paths', () => {
    const pipe = new ZodBody(RecallFeedback);
    expect(() => pipe.transform(undefined)).toThrow(ValidationFailed);
    try {
      pipe.transform({ adopted: [], extra: 1 });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationFailed);
      expect((error as ValidationFailed).code).toBe('REQUEST.VALIDATION_FAILED');
      expect(JSON.stringify((error as ValidationFailed).details)).toContain('adopted');
    }
  });
});
