import type { z } from 'zod';
import { ValidationFailed } from './errors';

/**
 * Parses with a zod schema and turns failures into a `ValidationFailed`
 * naming each failing path. Unknown keys are counted, not named: a key is
 * the caller's input, and error messages echo none.
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ValidationFailed(
    result.error.issues.map((issue) => ({
      path: issue.path.map(String).join('.'),
      message: issue.code === 'unrecognized_keys' ? `${issue.keys.length} unknown field(s)` : issue.message,
    })),
  );
}
