import { Injectable, type PipeTransform } from '@nestjs/common';
import type { z } from 'zod';
import { parseOrThrow } from '@elma/domain';

/**
 * Validates a request body against its zod schema at the edge, before the
 * handler runs, and hands the handler the parsed DTO. A body that fails is
 * refused as the services refuse it (422 REQUEST.VALIDATION_FAILED with the paths),
 * since both go through `parseOrThrow`. Runs after the guard, so an
 * unauthenticated caller still gets 401 first.
 *
 * Only for bodies a service validates before anything else: where a role is
 * checked (and a denial audited) before the body is read, validating here
 * first would answer 422 where the API answers 403.
 */
@Injectable()
export class ZodBody<S extends z.ZodType> implements PipeTransform<unknown, z.infer<S>> {
  constructor(
    private readonly schema: S,
    /** What an absent (or `null`) body stands for, e.g. `{}` for a body that is optional. */
    private readonly absent?: unknown,
  ) {}

  transform(body: unknown): z.infer<S> {
    return parseOrThrow(this.schema, body == null && this.absent !== undefined ? this.absent : body);
  }
}
