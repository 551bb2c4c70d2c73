import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '@elma/domain';
import type { ElmaMetrics } from '@elma/infra';
import type { Logger } from '@elma/shared';

/** Label and log value of a request that matched no route: the raw URL is never used. */
export const UNMATCHED_ROUTE = 'unmatched';

const PROBLEM_TYPE = 'application/problem+json';

/** What the access log and the request metrics know of a request once it is answered. */
export interface AnsweredRequest {
  requestId: string;
  /** The route template (`/v1/memories/:id`), never the URL: no ids, no query string. */
  route: string;
  method: string;
  status: number;
  durationMs: number;
  /** The token's tenant, when the request was authenticated. */
  tenant?: string;
  /** A keyed hash of the token's tenant and subject (see `Elma.callerPseudonym`), when authenticated. */
  caller?: string;
  /** The problem's stable `code`, when the answer was problem+json. */
  code?: string;
}

export interface RequestTelemetryOptions {
  metrics: ElmaMetrics;
  /** Where the access log goes; none when undefined (ELMA_ACCESS_LOG=false). */
  accessLog?: Logger;
  callerPseudonym(tenant: string, subject: string): string;
}

/**
 * Counts and times every answered request (by route template, method,
 * status; errors by problem code; authenticated requests by tenant) and
 * writes one access log line per request. Neither carries content, a query
 * string, a subject id or any token claim other than the tenant: the caller
 * appears as a keyed pseudonym in the log and not at all in the metrics.
 */
export function registerRequestTelemetry(fastify: FastifyInstance, options: RequestTelemetryOptions): void {
  const codes = new WeakMap<FastifyRequest, string>();
  // The problem's code is read from the answer itself, so every path that sends one (exception filter,
  // body-parser errors, admission, the router's 404) is counted the same way.
  fastify.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400 && String(reply.getHeader('content-type') ?? '').startsWith(PROBLEM_TYPE)) {
      const code = problemCode(payload);
      if (code) codes.set(request, code);
    }
    return payload;
  });
  fastify.addHook('onResponse', async (request, reply) => {
    const answered = answeredRequest(request, reply, codes.get(request), options.callerPseudonym);
    recordRequest(options.metrics, answered);
    options.accessLog?.info('request', { ...answered });
  });
}

function answeredRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  code: string | undefined,
  callerPseudonym: (tenant: string, subject: string) => string,
): AnsweredRequest {
  const principal = (request as FastifyRequest & { principal?: Principal }).principal;
  return {
    requestId: String(request.id),
    route: request.routeOptions.url ?? UNMATCHED_ROUTE,
    method: request.method,
    status: reply.statusCode,
    durationMs: Math.round(reply.elapsedTime * 10) / 10,
    ...(principal ? { tenant: principal.tenant, caller: callerPseudonym(principal.tenant, principal.sub) } : {}),
    ...(code ? { code } : {}),
  };
}

function recordRequest(metrics: ElmaMetrics, answered: AnsweredRequest): void {
  const labels = { route: answered.route, method: answered.method, status: String(answered.status) };
  metrics.httpRequests.inc(labels);
  metrics.httpDuration.observe(labels, answered.durationMs / 1000);
  if (answered.status >= 400) metrics.httpErrors.inc({ ...labels, code: answered.code ?? 'UNKNOWN' });
  if (answered.tenant) metrics.tenantRequests.inc({ tenant: answered.tenant });
}

/** The `code` of a problem+json body; only a code-shaped value (`AREA.NAME`) is kept, never free text. */
function problemCode(payload: unknown): string | undefined {
  const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
  if (!text) return undefined;
  try {
    const code = (JSON.parse(text) as { code?: unknown }).code;
    return typeof code === 'string' && /^[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)+$/.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}
