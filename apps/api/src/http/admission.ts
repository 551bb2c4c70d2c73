import { DomainError } from '@elma/domain';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendGraphqlRequestError } from '../graphql/errors';
import { sendProblem } from './problem.filter';

/** Work a request stands for; each class has its own bound, so a flood of recalls does not stop ingest. */
export type RequestClass = 'recall' | 'ingest' | 'other';

export interface AdmissionLimits {
  /** Requests of one class handled at once. */
  maxInflight: number;
  /** Requests of one class waiting for a slot; beyond this they are shed at once. */
  maxQueue: number;
  /** How long a request may wait for a slot before it is shed. */
  maxQueueWaitMs: number;
}

/** The server is at its bound for this kind of request; the client should retry after `retryAfterSeconds`. */
export class Overloaded extends DomainError {
  constructor(
    readonly requestClass: RequestClass,
    readonly retryAfterSeconds: number,
  ) {
    super('SERVER.OVERLOADED', `too many ${requestClass} requests in progress; retry after ${retryAfterSeconds} s`);
  }
}

/**
 * Which class a request belongs to, or null for requests that are never shed:
 * health and metrics must answer under load (that is when they are needed),
 * and documents served from memory cost nothing.
 */
export function requestClass(method: string, url: string): RequestClass | null {
  const path = url.split('?')[0];
  if (method === 'GET' && /^\/(health|metrics|docs|\.well-known)(\/|$)/.test(path)) return null;
  if (path === '/v1/recall' || path.startsWith('/v1/recall/')) return 'recall';
  if (method === 'POST' && path === '/v1/events') return 'ingest';
  return 'other';
}

/**
 * A bounded number of requests in flight plus a short bounded FIFO of
 * waiting ones. Queueing without limit only turns overload into timeouts a
 * minute later for everyone; shedding early tells clients to back off while
 * the admitted requests keep their latency.
 */
export class AdmissionGate {
  private inflight = 0;
  private readonly waiting: (() => void)[] = [];
  shed = 0;

  constructor(private readonly limits: AdmissionLimits) {}

  /** A release function once a slot is held, or undefined when the request is shed. */
  enter(): Promise<(() => void) | undefined> {
    if (this.inflight < this.limits.maxInflight) return Promise.resolve(this.hold());
    if (this.waiting.length >= this.limits.maxQueue) return Promise.resolve(this.refuse());
    return new Promise((resolve) => {
      const admit = () => {
        clearTimeout(timer);
        resolve(this.hold());
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(admit);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve(this.refuse());
      }, this.limits.maxQueueWaitMs);
      this.waiting.push(admit);
    });
  }

  get state(): { inflight: number; waiting: number; shed: number } {
    return { inflight: this.inflight, waiting: this.waiting.length, shed: this.shed };
  }

  private refuse(): undefined {
    this.shed++;
    return undefined;
  }

  private hold(): () => void {
    this.inflight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inflight--;
      // The slot passes straight to the oldest waiter, so a burst cannot overtake the queue.
      this.waiting.shift()?.();
    };
  }
}

/**
 * Admission control for every route: the first hook of a request, before
 * its body is read. A shed request gets 503 `SERVER.OVERLOADED` with
 * `Retry-After`, as problem+json (as a GraphQL response on /graphql); a slot is released when the response is finished or
 * the connection closes, whichever comes first.
 */
export function registerAdmission(fastify: FastifyInstance, limits: AdmissionLimits): Record<RequestClass, AdmissionGate> {
  const gates: Record<RequestClass, AdmissionGate> = {
    recall: new AdmissionGate(limits),
    ingest: new AdmissionGate(limits),
    other: new AdmissionGate(limits),
  };
  const retryAfterSeconds = Math.max(1, Math.ceil(limits.maxQueueWaitMs / 1000));
  fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const kind = requestClass(request.method, request.url);
    if (kind === null) return;
    const release = await gates[kind].enter();
    if (!release) {
      void reply.header('retry-after', String(retryAfterSeconds));
      // Not logged one by one: under overload that would add a write per refused request.
      const overloaded = new Overloaded(kind, retryAfterSeconds);
      if (request.routeOptions.url === '/graphql') sendGraphqlRequestError(request, reply, overloaded, 503);
      else sendProblem(request, reply, overloaded, () => undefined);
      return reply;
    }
    if (reply.raw.destroyed) {
      release();
      return;
    }
    reply.raw.once('close', release);
  });
  return gates;
}
