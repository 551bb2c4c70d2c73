import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
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

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  error: unknown,
  onServerError: (error: unknown, requestId: string, problem: Problem) => void,
): void {
  const problem = toProblem(error, request.url.split('?')[0], String(request.id));
  if (problem.status >= 500) onServerError(error, String(request.id), problem);
  void reply.status(problem.status).header('content-type', 'application/problem+json').send(problem);
}
