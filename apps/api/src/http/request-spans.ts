import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Span } from '@opentelemetry/api';
import type { Tracing } from '@elma/infra';
import { UNMATCHED_ROUTE } from './request-telemetry';

/**
 * One span per API request, named by method and route template, the parent
 * of the service calls and Temporal client calls its handler makes.
 * Attributes: method, route template, status code; never the URL, a query
 * string, a header or a body.
 */
export function registerRequestSpans(fastify: FastifyInstance, tracing: Tracing | undefined): void {
  if (!tracing) return;
  const spans = new WeakMap<FastifyRequest, Span>();
  fastify.addHook('onRequest', (request, _reply, done) => {
    spans.set(request, tracing.startSpan(`${request.method} ${request.routeOptions.url ?? UNMATCHED_ROUTE}`));
    done();
  });
  // Activated once the body is read: a body arrives on the socket's own async context, which would lose it.
  fastify.addHook('preHandler', (request, _reply, done) => {
    const span = spans.get(request);
    if (span) tracing.activate(span, done);
    else done();
  });
  fastify.addHook('onResponse', async (request, reply) => {
    const span = spans.get(request);
    if (!span) return;
    span.setAttributes({
      'http.request.method': request.method,
      'http.route': request.routeOptions.url ?? UNMATCHED_ROUTE,
      'http.response.status_code': reply.statusCode,
    });
    span.end();
  });
}

/**
 * A service whose method calls are spans (`<name>.<method>`), children of the request's; with tracing off
 * the service itself. Arguments and results never reach a span: they hold content and subject ids.
 */
export function tracedService<T extends object>(tracing: Tracing | undefined, name: string, service: T): T {
  if (!tracing) return service;
  return new Proxy(service, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string' || property === 'constructor') return value;
      return (...args: unknown[]) =>
        tracing.inSpan(`${name}.${property}`, () => (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
}
