import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { DomainError } from '@elma/domain';
import { toProblem, type Problem } from './problem';

/** The one place where errors become HTTP responses (problem+json with a stable code). */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  constructor(private readonly onServerError: (error: unknown, requestId: string, problem: Problem) => void) {}

  catch(error: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw error;
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    sendProblem(request, reply, error, this.onServerError);
  }
}

/**
 * Sends the problem for `error`. It carries the request id, not the path:
 * the path is the caller's input (a 404 or 414 would echo it back).
 */
export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  error: unknown,
  onServerError: (error: unknown, requestId: string, problem: Problem) => void,
): void {
  let problem = toProblem(error, undefined, String(request.id));
  if (problem.code === 'ROUTE.NOT_FOUND') {
    const allowed = allowedMethods(request);
    if (allowed.length > 0) {
      problem = toProblem(
        new DomainError('ROUTE.METHOD_NOT_ALLOWED', `this route answers ${allowed.join(', ')}`),
        undefined,
        String(request.id),
      );
      void reply.header('allow', allowed.join(', '));
    }
  }
  // A refusal that knows when a retry can succeed (a quota's bucket) says so.
  const retryAfter = error instanceof DomainError ? error.details.retryAfterSeconds : undefined;
  if (typeof retryAfter === 'number') void reply.header('retry-after', String(retryAfter));
  if (problem.status >= 500) onServerError(error, String(request.id), problem);
  void reply.status(problem.status).header('content-type', 'application/problem+json').send(problem);
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** The methods the path has routes for, when the request's method is not one of them (a 405 rather than a 404). */
function allowedMethods(request: FastifyRequest): string[] {
  const path = request.url.split('?')[0];
  return METHODS.filter((method) => method !== request.method && request.server.findRoute({ method, url: path }) !== null);
}

/**
 * Errors Node's HTTP parser raises before Fastify has a request (headers too
 * large, a malformed request line, a timeout): answered as problem+json on
 * the raw socket, then the connection is closed, as Node itself does.
 */
export function clientErrorResponse(error: { code?: string }): string {
  const problem = toProblem(
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new DomainError('REQUEST.HEADERS_TOO_LARGE', 'the request line and headers exceed the server limit')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' || error.code === 'ERR_HTTP_HEADERS_TIMEOUT'
        ? new DomainError('REQUEST.TIMEOUT', 'the request was not received in time')
        : new DomainError('REQUEST.MALFORMED', 'the request is not valid HTTP'),
  );
  const body = JSON.stringify(problem);
  return [
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}`,
    'Content-Type: application/problem+json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** Fastify's `clientErrorHandler`: the problem on the socket, if it can still be written. */
export function onClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) socket.write(clientErrorResponse(error));
  socket.destroy(error);
}
