import { z } from 'zod';
import { DomainError } from './errors';

/** Items a listing returns when the caller names no `limit`. */
export const DEFAULT_PAGE_LIMIT = 50;
/** The most a listing returns at once; a larger `limit` is refused, not cut. */
export const MAX_PAGE_LIMIT = 200;
/** A cursor is a few dozen characters; anything far longer was not made by ELMA. */
const MAX_CURSOR_LENGTH = 512;

/** `limit` and `cursor` of a listing's query string. */
export const PageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_LIMIT).default(DEFAULT_PAGE_LIMIT),
  /** The `nextCursor` of the page before, as it was given: opaque. */
  cursor: z
    .string()
    .min(1)
    .max(MAX_CURSOR_LENGTH)
    .regex(/^[A-Za-z0-9_.-]+$/, 'a cursor from a previous page')
    .optional(),
});

/** One page of a listing; `nextCursor` is null on the last page. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * A listing's query string is not valid (an unknown parameter, a value out of
 * its range, a `limit` over MAX_PAGE_LIMIT): `errors` names each path,
 * never the value given.
 */
export class InvalidQuery extends DomainError {
  constructor(readonly issues: { path: string; message: string }[]) {
    super('REQUEST.INVALID_QUERY', `invalid query: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`, {
      issues,
    });
  }
}

/**
 * A cursor ELMA did not hand to this caller for this listing: forged, altered,
 * made for another tenant, caller or set of filters, or by another
 * installation. Says nothing about what the cursor held.
 */
export class InvalidCursor extends DomainError {
  constructor() {
    super('REQUEST.INVALID_CURSOR', 'the cursor was not issued for this listing; start again without one');
  }
}

/**
 * Parses a listing's query string; a failure is an `InvalidQuery` (400), as a
 * query string is part of the request's address rather than a body. Unknown
 * parameters are counted, not named, as `parseOrThrow` does.
 */
export function parseQueryOrThrow<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data;
  throw new InvalidQuery(
    result.error.issues.map((issue) => ({
      path: issue.path.map(String).join('.'),
      message: issue.code === 'unrecognized_keys' ? `${issue.keys.length} unknown parameter(s)` : issue.message,
    })),
  );
}
