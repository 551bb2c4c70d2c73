import type { Problem } from './types.js';

/** Codes of errors the client raises itself, when no problem came back from ELMA. */
export const CLIENT_CODES = {
  /** No answer within the timeout. */
  timeout: 'CLIENT.TIMEOUT',
  /** No connection: refused, reset, unknown host. */
  unreachable: 'CLIENT.UNREACHABLE',
  /** An answer that is neither the expected JSON nor an RFC 9457 problem (e.g. a proxy's HTML page). */
  unexpectedResponse: 'CLIENT.UNEXPECTED_RESPONSE',
} as const;

/**
 * Any failed call: the RFC 9457 problem ELMA answered with (`status`, stable `code`, `title`, `detail`,
 * `requestId` to quote to an operator), or one the client made up for a call that got no problem back
 * (`status` 0 or the HTTP status, a `CLIENT.*` code). The message names the code, the method, the path and
 * the server's origin; never the token, never the query string (it may name a data subject).
 */
export class ElmaError extends Error {
  override readonly name = 'ElmaError';
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly requestId: string | undefined;
  /** Seconds the server asked to wait before retrying (`Retry-After`), when it said. */
  readonly retryAfterSeconds: number | undefined;
  readonly problem: Problem;

  constructor(problem: Problem, context: { method: string; url: URL; retryAfterSeconds?: number; cause?: unknown }) {
    super(
      `${problem.code}: ${problem.detail} (${context.method} ${context.url.origin}${context.url.pathname}, HTTP ${problem.status || 'none'})`,
      {
        cause: context.cause,
      },
    );
    this.problem = problem;
    this.status = problem.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.requestId = problem.requestId;
    this.retryAfterSeconds = context.retryAfterSeconds;
  }
}

/** A problem the client writes itself (no problem+json came back). */
export function clientProblem(code: string, status: number, detail: string): Problem {
  return { type: 'about:blank', title: code, status, detail, code };
}

/** Whether `value` has the members ELMA's problem+json always carries. */
export function isProblem(value: unknown): value is Problem {
  if (!value || typeof value !== 'object') return false;
  const p = value as Record<string, unknown>;
  return typeof p.code === 'string' && typeof p.status === 'number' && typeof p.title === 'string' && typeof p.detail === 'string';
}
