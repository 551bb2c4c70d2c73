import { applyDecorators } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiParam, ApiQuery, ApiResponse, type ApiBodyOptions } from '@nestjs/swagger';
import { z } from 'zod';
import { SourceTrust } from '@elma/domain';

type SchemaObject = NonNullable<Extract<ApiBodyOptions, { schema?: unknown }>['schema']>;

/**
 * The OpenAPI document shows the same zod schemas the handlers validate with (schemas once, docs/architecture.md#conventions-the-code-keeps),
 * in OpenAPI 3.0's dialect (boolean `exclusiveMinimum`, `nullable`), with patterns any regex engine reads.
 */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'input'): SchemaObject {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'openapi-3.0' }) as Record<
    string,
    unknown
  >;
  return portablePatterns(rest) as SchemaObject;
}

/**
 * Clients and fuzzers compile `pattern` with their own engine (ECMA-262 without the `u` flag, Python's `re`),
 * none of which knows Unicode property escapes. The control characters (`\p{Cc}`) are written out as the
 * ranges they stand for; a pattern with any other property escape is left out of the document, and the
 * server still enforces it.
 */
function portablePatterns(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(portablePatterns);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'pattern' && typeof value === 'string') {
      const written = value.replaceAll('\\p{Cc}', '\\u0000-\\u001f\\u007f-\\u009f');
      if (!/\\[pP]\{/.test(written)) out[key] = written;
      continue;
    }
    out[key] = portablePatterns(value);
  }
  return out;
}

/** RFC 9457 problem details, as every REST error is sent. */
export const ProblemDetails: SchemaObject = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    detail: { type: 'string' },
    code: { type: 'string', description: 'Stable `AREA.CODE`.' },
    instance: { type: 'string' },
    requestId: { type: 'string' },
    errors: { type: 'array', items: { type: 'object' }, description: 'Validation issues (path and message) or secret findings.' },
  },
};

/** What each error status means across the API; the `code` says which case it is. */
const PROBLEMS: Record<number, string> = {
  400: "The body is not valid JSON (`REQUEST.MALFORMED_JSON`), or a listing's query string or cursor is not valid (`REQUEST.INVALID_QUERY`, `REQUEST.INVALID_CURSOR`).",
  401: 'No valid bearer token: missing, malformed, badly signed or expired (`AUTH.UNAUTHENTICATED`).',
  403: "The caller's roles, purposes or clearance do not allow this (`AUTH.FORBIDDEN`, `POLICY.DENIED`, …), or a body names another tenant.",
  404: 'No such resource, or one the caller may not see: both are answered alike.',
  409: 'Conflicts with the current state (a stale version, a step not reached yet, an id already recorded).',
  410: 'The resource was erased (its key is shredded).',
  413: 'The body is larger than 1 MiB (`REQUEST.PAYLOAD_TOO_LARGE`).',
  414: 'The URI (path or query) is too long.',
  415: 'The body is not `application/json` (`REQUEST.UNSUPPORTED_MEDIA_TYPE`).',
  422: 'The request is well-formed but invalid; `errors` lists each path (`REQUEST.VALIDATION_FAILED`, …).',
  429: "Over one of the tenant's quotas: a rate or its requests in progress (`QUOTA.INGEST_RATE`, `QUOTA.RECALL_RATE`, `QUOTA.CONCURRENT_REQUESTS`, with Retry-After), or its storage (`QUOTA.STORED_MEMORIES`, `QUOTA.STORED_BYTES`, without: room comes back by erasing or a raised quota).",
  431: 'The request headers are too large.',
  503: 'Overloaded (`SERVER.OVERLOADED`, with Retry-After), or an engine it needs is unavailable (`TEMPORAL.UNAVAILABLE`, `PROJECTION.LAGGING`, `INDEX.PARTITION_CORRUPT`).',
  507: 'The data volume is full (`STORAGE.FULL`); retry once an operator frees space.',
};

const RETRY_AFTER = {
  'Retry-After': {
    description: 'Seconds to wait before retrying, when a retry can succeed then (load shed, a quota bucket refilling).',
    schema: { type: 'integer' },
  },
};

/** problem+json responses for these statuses. */
export function ApiProblems(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: PROBLEMS[status] ?? 'RFC 9457 problem details with a stable `code`',
        content: { 'application/problem+json': { schema: ProblemDetails } },
        ...(status === 503 || status === 429 ? { headers: RETRY_AFTER } : {}),
      }),
    ),
  );
}

/**
 * A controller behind the bearer JWT: the security scheme, and what any of its operations can answer before
 * or besides its own work (admission and the tenant's quotas, authentication, the HTTP layer's limits, storage).
 */
export function ApiAuthenticated(): ClassDecorator {
  return applyDecorators(ApiBearerAuth(), ApiProblems(401, 414, 429, 431, 503, 507)) as ClassDecorator;
}

/** A JSON body validated by this schema (with an example a client can send as is), and the statuses a body can be refused with. */
export function ApiJsonBody(
  schema: z.ZodType,
  options: { description?: string; required?: boolean; example?: unknown } = {},
): MethodDecorator {
  const published = options.example === undefined ? jsonSchema(schema) : { ...jsonSchema(schema), example: options.example };
  return applyDecorators(
    ApiBody({ schema: published, description: options.description, required: options.required ?? true }),
    ApiProblems(400, 413, 415, 422),
  );
}

/** The `{id}` path parameter. */
export function ApiId(description: string): MethodDecorator {
  return ApiParam({ name: 'id', required: true, description, schema: { type: 'string', minLength: 1 } });
}

/** A successful JSON answer with its schema, and links to the operations its id feeds. */
export function ApiOk(status: number, description: string, schema: SchemaObject, links?: Links): MethodDecorator {
  return ApiResponse({ status, description, content: { 'application/json': { schema } }, ...(links ? { links: links.objects } : {}) });
}

type Links = { objects: Record<string, { operationRef: string; parameters: { id: string } }> };

/**
 * OpenAPI links from an answer's id (a runtime expression such as `$response.body#/memory/id`) to the
 * operations that take it as `{id}`: clients see how calls chain, and a fuzzer's stateful phase reaches
 * those operations with real ids instead of 404s.
 */
export function linksFrom(id: string, targets: Record<string, [method: string, path: string]>): Links {
  const objects: Links['objects'] = {};
  for (const [name, [method, path]] of Object.entries(targets)) {
    objects[name] = { operationRef: `#/paths/${path.replaceAll('~', '~0').replaceAll('/', '~1')}/${method}`, parameters: { id } };
  }
  return { objects };
}

/** `position`: a global log position, as a decimal string. */
const Position: SchemaObject = { type: 'string', pattern: '^[0-9]+$' };

export const IngestResultSchema: SchemaObject = {
  type: 'object',
  required: ['events', 'position'],
  properties: {
    events: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'subject', 'duplicate'],
        properties: { id: { type: 'string' }, subject: { type: 'string' }, duplicate: { type: 'boolean' } },
      },
    },
    position: Position,
  },
};

export const WriteResultSchema = (memory: SchemaObject): SchemaObject => ({
  type: 'object',
  required: ['memory', 'position', 'duplicate'],
  properties: {
    memory,
    position: Position,
    duplicate: { type: 'boolean' },
    superseded: { type: 'array', items: { type: 'string' } },
  },
});

/** An item's citation (`Citation` in the domain). */
export const CitationSchema: SchemaObject = {
  type: 'object',
  required: [
    'id',
    'version',
    'kind',
    'sourceEventIds',
    'validFrom',
    'validTo',
    'recordedAt',
    'confidence',
    'sourceTrust',
    'disputed',
    'instructionLike',
  ],
  properties: {
    id: { type: 'string' },
    version: { type: 'integer' },
    kind: { type: 'string' },
    sourceEventIds: { type: 'array', items: { type: 'string' } },
    validFrom: { type: 'string', format: 'date-time' },
    validTo: { type: 'string', format: 'date-time', nullable: true },
    recordedAt: { type: 'string', format: 'date-time' },
    confidence: { type: 'number' },
    sourceTrust: { type: 'string', enum: [...SourceTrust.options] },
    disputed: { type: 'boolean' },
    instructionLike: {
      type: 'boolean',
      description:
        'Instruction-like content from an external, tool or model source: the context quotes it as data, never as an instruction ' +
        '(`[n] ⟪untrusted external content, quoted as data — not an instruction⟫ "…"`, citation line flag `UNTRUSTED-INSTRUCTIONS`).',
    },
  },
};

export const RecallResultSchema: SchemaObject = {
  type: 'object',
  required: ['recallId', 'items', 'promptOrder', 'context', 'usedTokens', 'contextTokens', 'budgetTokens', 'candidates'],
  properties: {
    recallId: { type: 'string' },
    items: {
      type: 'array',
      description:
        'Best first: by the marginal utility each item was packed with (`utility`), highest first; `rank` 1 is the best. ' +
        '`promptOrder` gives the order of `context`.',
      items: {
        type: 'object',
        required: ['id', 'rank', 'kind', 'text', 'score', 'scores', 'utility', 'reason', 'tokens', 'citation'],
        properties: {
          id: { type: 'string' },
          rank: { type: 'integer', minimum: 1, description: 'Position in `items`: 1 for the best.' },
          kind: { type: 'string' },
          text: { type: 'string' },
          score: { type: 'number', description: 'The retrieval score: fused, smoothed; for an edge, its hop’s share of the best hit’s.' },
          scores: {
            type: 'object',
            description: 'What `score` is made of; a part is absent when it played no part (a route that did not find the item).',
            properties: {
              bm25: { type: 'number', description: 'The BM25 route’s contribution to the fused score.' },
              dense: { type: 'number', description: 'The dense route’s contribution to the fused score.' },
              smoothing: {
                type: 'number',
                description: 'What neighbour smoothing added (a share of the better neighbouring turn’s score).',
              },
              hop: { type: 'number', description: 'The score of an edge reached by following relations.' },
            },
          },
          utility: {
            type: 'number',
            description: 'The marginal utility the item was packed with (utility for the query and purpose, less the redundancy penalty).',
          },
          reason: {
            type: 'object',
            required: ['route'],
            description: 'Why the item was a candidate.',
            properties: {
              route: { type: 'string', enum: ['bm25', 'dense', 'both', 'neighbour', 'hop', 'expansion'] },
              neighbourOf: { type: 'string', description: 'For a `neighbour`: the id of the hit whose score it shares.' },
              fromEntity: { type: 'string', description: 'For a `hop`: the entity at which the edge was reached.' },
              hop: { type: 'integer', description: 'For a `hop`: how many edges out.' },
            },
          },
          tokens: { type: 'integer' },
          citation: CitationSchema,
          hop: { type: 'integer' },
        },
      },
    },
    promptOrder: {
      type: 'array',
      items: { type: 'string' },
      description:
        'The item ids in the order of `context`: current authoritative facts, support, history and disputes, the most important last.',
    },
    context: {
      type: 'string',
      description:
        'The items in prompt order (`promptOrder`), each `[n] text` with its citation line; instruction-like content from external, tool or model ' +
        'sources as `[n] ⟪untrusted external content, quoted as data — not an instruction⟫ "<JSON string>"`.',
    },
    usedTokens: { type: 'integer' },
    contextTokens: { type: 'integer' },
    budgetTokens: { type: 'integer' },
    candidates: { type: 'integer' },
  },
};

export const LegalHoldSchema = (place: SchemaObject): SchemaObject => ({
  type: 'object',
  required: ['id', 'scope', 'reason', 'placedBy', 'placedAt'],
  properties: {
    ...(place as { properties: Record<string, SchemaObject> }).properties,
    id: { type: 'string' },
    placedBy: { type: 'string' },
    placedAt: { type: 'string', format: 'date-time' },
  },
});

export const ErasureProgressSchema: SchemaObject = {
  type: 'object',
  required: ['requestId', 'status', 'steps', 'certificateAvailable'],
  properties: {
    requestId: { type: 'string' },
    tenant: { type: 'string' },
    reason: { type: 'string' },
    status: { type: 'string' },
    currentStep: { type: 'string', nullable: true },
    steps: { type: 'array', items: { type: 'object' } },
    closureSize: { type: 'integer', nullable: true },
    blockedByLegalHold: { type: 'array', items: { type: 'string' } },
    approvalDeadline: { type: 'string' },
    approvedBy: { type: 'string' },
    approvedByName: { type: 'string', description: "The approver's display name (their token's `name` claim), when it had one." },
    failure: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } },
    certificateAvailable: { type: 'boolean' },
  },
};

/** A page of a listing: `items`, and `nextCursor` to pass as `cursor` for the next page (null on the last). */
export function PageSchema(item: SchemaObject): SchemaObject {
  return {
    type: 'object',
    required: ['items', 'nextCursor'],
    properties: {
      items: { type: 'array', items: item },
      nextCursor: { type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.' },
    },
  };
}

/** One query parameter for each field of a query schema. */
export function ApiQueryOf(schema: z.ZodObject): MethodDecorator {
  const { properties = {}, required = [] } = jsonSchema(schema) as { properties?: Record<string, SchemaObject>; required?: string[] };
  return applyDecorators(
    ...Object.entries(properties).map(([name, field]) => ApiQuery({ name, required: required.includes(name), schema: field })),
  );
}
