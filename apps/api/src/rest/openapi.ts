import { z } from 'zod';
import type { ApiBodyOptions } from '@nestjs/swagger';

type SchemaObject = NonNullable<Extract<ApiBodyOptions, { schema?: unknown }>['schema']>;

/** The OpenAPI document shows the same zod schemas the handlers validate with (schemas once, STYLE.md §5). */
export function jsonSchema(schema: z.ZodType): SchemaObject {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest as SchemaObject;
}

export const problemResponse = {
  description: 'RFC 9457 problem details with a stable `code`',
  content: {
    'application/problem+json': {
      schema: {
        type: 'object',
        properties: {
          type: { type: 'string' },
          title: { type: 'string' },
          status: { type: 'integer' },
          detail: { type: 'string' },
          code: { type: 'string' },
          instance: { type: 'string' },
          errors: { type: 'array', items: { type: 'object' } },
        },
      },
    },
  },
};
