import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GraphQLError, GraphQLSchema } from 'graphql';
import type { DomainError } from '@elma/domain';
import { toProblem, type Problem } from '../http/problem';
import { causeOf } from '../http/server-errors';

/**
 * How an error came about decides the HTTP status and the response shape
 * (GraphQL spec, Response; GraphQL-over-HTTP draft):
 * - `transport`: the HTTP request is not a GraphQL request at all (bad JSON, a
 *   batch, no query): its own 4xx, no `data`.
 * - `request`: the document does not parse or validate, exceeds a limit or
 *   its variables do not coerce; nothing ran, so no `data`. 400 for clients
 *   that accept `application/graphql-response+json`, 200 for `application/json`.
 * - `field`: raised while resolving; `data` is present (possibly null), 200.
 */
type Kind = 'transport' | 'request' | 'field';

interface Classified {
  kind: Kind;
  code: string;
  status: number;
  message: string;
  errors?: unknown;
  locations?: GraphQLError['locations'];
  path?: GraphQLError['path'];
  internal?: { error: unknown; problem: Problem };
}

/** What mercurius puts in the context it hands the formatter. */
interface Context {
  reply?: FastifyReply;
  app?: { graphql?: { schema?: GraphQLSchema } };
}

type ServerErrorLog = (problem: Problem, fields: Record<string, unknown>) => void;

export const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json';

/** The client asked for the GraphQL-over-HTTP media type, whose statuses tell request errors apart. */
export function wantsGraphqlResponse(request: FastifyRequest | undefined): boolean {
  const accept = request?.headers.accept;
  return typeof accept === 'string' && accept.includes(GRAPHQL_RESPONSE_TYPE);
}

const NOT_A_GRAPHQL_REQUEST = 'send one operation as a JSON object with a string `query` (and optional `variables`, `operationName`)';

/**
 * The error formatter of /graphql: every error gets a stable code in
 * `extensions.code` (the same `AREA.CODE` codes as REST), a message that
 * echoes nothing of the request but names of the schema, and a status.
 * Only a real fault is SERVER.INTERNAL; it is logged with its cause and the
 * request id, which the error also carries. Client errors log nothing.
 */
export function graphqlErrorFormatter(logServerError: ServerErrorLog) {
  const namesOf = schemaNames();
  return (execution: { data?: Record<string, unknown> | null; errors?: readonly GraphQLError[] }, context: Context) => {
    const request = context.reply?.request;
    const requestId = request ? String(request.id) : undefined;
    const names = namesOf(context.app?.graphql?.schema);
    const classified = (execution.errors ?? []).flatMap((error) => classify(error, request, names));
    for (const c of classified) {
      if (!c.internal) continue;
      const { error, problem } = c.internal;
      logServerError(problem, { api: 'graphql', requestId, ...causeOf(error), ...(c.path ? { field: c.path.join('.') } : {}) });
    }
    const errors = classified.map((c) => ({
      message: c.message,
      ...(c.locations ? { locations: c.locations } : {}),
      ...(c.path ? { path: c.path } : {}),
      extensions: {
        code: c.code,
        status: c.status,
        ...(c.errors ? { errors: c.errors } : {}),
        ...(c.internal && requestId ? { requestId } : {}),
      },
    }));
    if (classified.some((c) => c.code === 'GRAPHQL.METHOD_NOT_ALLOWED')) void context.reply?.header('allow', 'POST');
    // A quota refusal inside a resolver: the same Retry-After as REST, the longest when several fields were refused.
    const retryAfter = Math.max(
      0,
      ...(execution.errors ?? []).map((e) => Number((e.originalError as DomainError | undefined)?.details?.retryAfterSeconds ?? 0)),
    );
    if (retryAfter > 0) void context.reply?.header('retry-after', String(retryAfter));
    const executed = classified.some((c) => c.kind === 'field') || execution.data !== undefined;
    return {
      statusCode: httpStatus(classified, executed, request),
      response: executed ? { data: execution.data ?? null, errors } : { errors },
    };
  };
}

function httpStatus(classified: Classified[], executed: boolean, request: FastifyRequest | undefined): number {
  if (executed) return 200;
  const transport = classified.find((c) => c.kind === 'transport');
  if (transport) return transport.status;
  return wantsGraphqlResponse(request) ? 400 : 200;
}

function classify(error: GraphQLError, request: FastifyRequest | undefined, names: ReadonlySet<string>): Classified[] {
  const original = error.originalError as (Error & { code?: string; errors?: unknown[]; statusCode?: number }) | undefined;
  if (original?.code === 'MER_ERR_GQL_VALIDATION') {
    // Fastify's body schema refused the request (a batch, a query that is not a string), or GET variables are not JSON.
    if (!Array.isArray(original.errors))
      return [transport('GRAPHQL.BAD_REQUEST', 'the `variables` or `extensions` parameter is not valid JSON')];
    return original.errors.map((inner) => requestError(inner, request, names));
  }
  if (original?.code?.startsWith('MER_ERR_GQL_PERSISTED_QUERY')) return [transport('GRAPHQL.BAD_REQUEST', NOT_A_GRAPHQL_REQUEST)];
  if (original?.code === 'MER_ERR_METHOD_NOT_ALLOWED') {
    return [{ kind: 'transport', code: 'GRAPHQL.METHOD_NOT_ALLOWED', status: 405, message: 'mutations need POST' }];
  }
  if (original?.code?.startsWith('FST_')) {
    // Raised before the document was read (JSON body, media type, size): the REST problem, as a GraphQL error.
    const problem = toProblem(original);
    return [{ kind: 'transport', code: problem.code, status: problem.status, message: problem.detail }];
  }
  if (!original) {
    // GraphQL itself: with a path, a resolver broke the schema's promise (a null for a non-null field), a fault;
    // without one, the request named an operation the document lacks.
    if (error.path) return [internal(error, error)];
    return [
      {
        kind: 'request',
        code: 'GRAPHQL.VALIDATION_FAILED',
        status: 400,
        message: withoutInput(error.message, names),
        locations: error.locations,
      },
    ];
  }
  const problem = toProblem(original);
  if (problem.status === 500) return [internal(error, original)];
  if (problem.status > 500) return [{ ...field(error, problem), internal: { error: original, problem } }];
  return [field(error, problem)];
}

function requestError(inner: unknown, request: FastifyRequest | undefined, names: ReadonlySet<string>): Classified {
  // Duck-typed: mercurius raises errors of graphql's CommonJS build, which `instanceof` on an ES import refuses.
  if (!isGraphqlError(inner)) {
    // Fastify's schema validation of the body or query string, or no query at all.
    return transport(
      'GRAPHQL.BAD_REQUEST',
      Array.isArray(request?.body) ? 'batched operations are not accepted: send one operation per request' : NOT_A_GRAPHQL_REQUEST,
    );
  }
  const own = inner.extensions?.code;
  const code =
    typeof own === 'string'
      ? own
      : inner.message.startsWith('Syntax Error')
        ? 'GRAPHQL.PARSE_FAILED'
        : inner.message.startsWith('Variable "$')
          ? 'GRAPHQL.BAD_USER_INPUT'
          : 'GRAPHQL.VALIDATION_FAILED';
  return { kind: 'request', code, status: 400, message: withoutInput(inner.message, names), locations: inner.locations };
}

const isGraphqlError = (error: unknown): error is GraphQLError => (error as Error | undefined)?.name === 'GraphQLError';

const transport = (code: string, message: string): Classified => ({ kind: 'transport', code, status: 400, message });

function field(error: GraphQLError, problem: Problem): Classified {
  return {
    kind: 'field',
    code: problem.code,
    status: problem.status,
    message: problem.detail,
    errors: problem.errors,
    locations: error.locations,
    path: error.path,
  };
}

function internal(error: GraphQLError, cause: unknown): Classified {
  const problem = toProblem(undefined);
  return {
    kind: 'field',
    code: problem.code,
    status: problem.status,
    message: problem.detail,
    locations: error.locations,
    path: error.path,
    internal: { error: cause, problem },
  };
}

/**
 * GraphQL's messages quote what the request said (`Cannot query field "x"`,
 * `got invalid value "…"`). A quoted fragment is kept when it is a name of
 * the schema or a path of such names (the caller learns the schema from
 * introspection anyway); anything else, and unquoted values, become `…`.
 */
export function withoutInput(message: string, names: ReadonlySet<string>): string {
  const known = (part: string) =>
    names.has(part.replace(/^\$|[[\]!]/g, '')) || /^\d+$/.test(part) || /^[!$&()[\]{}:=@|.]{1,3}$/.test(part) || part === '<EOF>';
  return message
    .replace(/"((?:[^"\\]|\\.)*)"/g, (whole, inner: string) => (inner.length <= 100 && inner.split('.').every(known) ? whole : '"…"'))
    .replace(/(invalid value )[^;]+(?=;)/g, '$1…')
    .replace(/(value: |found )(?!")(?!<EOF>)[^;]+?(?=;|\.?$)/g, '$1…');
}

/** The names a schema defines (types, fields, arguments, enum values), computed once per schema. */
function schemaNames() {
  const cache = new WeakMap<GraphQLSchema, Set<string>>();
  return (schema: GraphQLSchema | undefined): ReadonlySet<string> => {
    if (!schema) return new Set();
    let names = cache.get(schema);
    if (!names) {
      names = new Set();
      for (const type of Object.values(schema.getTypeMap())) {
        names.add(type.name);
        // Duck-typed for the same reason as isGraphqlError: the schema is of graphql's CommonJS build.
        const shaped = type as {
          getFields?: () => Record<string, { name: string; args?: { name: string }[] }>;
          getValues?: () => { name: string }[];
        };
        for (const f of Object.values(shaped.getFields?.() ?? {})) {
          names.add(f.name);
          for (const arg of f.args ?? []) names.add(arg.name);
        }
        for (const v of shaped.getValues?.() ?? []) names.add(v.name);
      }
      for (const directive of schema.getDirectives()) names.add(directive.name);
      cache.set(schema, names);
    }
    return names;
  };
}

/**
 * A request refused before GraphQL saw it (admission control), answered in
 * the GraphQL response format: no `data`, one error with the stable code.
 */
export function sendGraphqlRequestError(request: FastifyRequest, reply: FastifyReply, error: DomainError, status: number): void {
  void reply
    .status(status)
    .header('content-type', wantsGraphqlResponse(request) ? GRAPHQL_RESPONSE_TYPE : 'application/json; charset=utf-8')
    .send({ errors: [{ message: error.message, extensions: { code: error.code, status, requestId: String(request.id) } }] });
}
