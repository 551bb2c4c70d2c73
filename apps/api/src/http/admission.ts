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

/** Who a request counts for: its tenant, or `ANONYMOUS` before a valid token names one. */
export const ANONYMOUS = '';

interface Waiter {
  tenant: string;
  admit(): void;
  refuse(): void;
}

/**
 * A bounded number of requests in flight plus a short bounded queue of
 * waiting ones. Queueing without limit only turns overload into timeouts a
 * minute later for everyone; shedding early tells clients to back off while
 * the admitted requests keep their latency.
 *
 * Shared fairly between tenants, without reserving idle capacity: a lone
 * tenant may use every slot, but a freed slot goes to the waiting tenant that
 * holds the fewest (oldest first among equals), and when the queue is full a
 * newcomer takes the place of the newest waiter of the tenant with the most
 * waiters, if that is more than the newcomer's own. So a tenant flooding the
 * server fills only what the others leave, and theirs wait at most about
 * one request's time.
 */
export class AdmissionGate {
  private inflight = 0;
  private readonly inflightOf = new Map<string, number>();
  private readonly waiting: Waiter[] = [];
  shed = 0;

  constructor(private readonly limits: AdmissionLimits) {}

  /** A release function once a slot is held, or undefined when the request is shed. */
  enter(tenant: string = ANONYMOUS): Promise<(() => void) | undefined> {
    if (this.inflight < this.limits.maxInflight) return Promise.resolve(this.hold(tenant));
    if (this.waiting.length >= this.limits.maxQueue && !this.pushOutFor(tenant)) return Promise.resolve(this.refuse());
    return new Promise((resolve) => {
      const waiter: Waiter = {
        tenant,
        admit: () => {
          clearTimeout(timer);
          resolve(this.hold(tenant));
        },
        refuse: () => {
          clearTimeout(timer);
          resolve(this.refuse());
        },
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve(this.refuse());
      }, this.limits.maxQueueWaitMs);
      this.waiting.push(waiter);
    });
  }

  get state(): { inflight: number; waiting: number; shed: number } {
    return { inflight: this.inflight, waiting: this.waiting.length, shed: this.shed };
  }

  /** Slots each tenant holds now (tenants holding none are left out). */
  inflightByTenant(): Map<string, number> {
    return new Map(this.inflightOf);
  }

  /** Makes room in a full queue by refusing the newest waiter of the tenant with the most waiters, if it has more than `tenant`. */
  private pushOutFor(tenant: string): boolean {
    const counts = new Map<string, number>();
    for (const w of this.waiting) counts.set(w.tenant, (counts.get(w.tenant) ?? 0) + 1);
    let heaviest: string | undefined;
    for (const [t, n] of counts) if (heaviest === undefined || n > counts.get(heaviest)!) heaviest = t;
    if (heaviest === undefined || heaviest === tenant || counts.get(heaviest)! <= (counts.get(tenant) ?? 0) + 1) return false;
    const at = this.waiting.map((w) => w.tenant).lastIndexOf(heaviest);
    const [victim] = this.waiting.splice(at, 1);
    victim.refuse();
    return true;
  }

  private refuse(): undefined {
    this.shed++;
    return undefined;
  }

  private hold(tenant: string): () => void {
    this.inflight++;
    this.inflightOf.set(tenant, (this.inflightOf.get(tenant) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // Chosen while the releasing tenant still counts its slot: with equal shares the slot passes to another tenant.
      const next = this.next();
      this.inflight--;
      const held = (this.inflightOf.get(tenant) ?? 1) - 1;
      if (held > 0) this.inflightOf.set(tenant, held);
      else this.inflightOf.delete(tenant);
      next?.admit();
    };
  }

  /** The waiter a freed slot goes to: of the tenant holding the fewest slots, the oldest. */
  private next(): Waiter | undefined {
    let best = -1;
    for (let i = 0; i < this.waiting.length; i++) {
      if (best < 0 || (this.inflightOf.get(this.waiting[i].tenant) ?? 0) < (this.inflightOf.get(this.waiting[best].tenant) ?? 0)) best = i;
    }
    return best < 0 ? undefined : this.waiting.splice(best, 1)[0];
  }
}

/**
 * The tenant side of admission: who a request counts for (from its verified
 * token, before its body is read), and the tenant's quota of requests in
 * progress at once. Without it every request counts for `ANONYMOUS`.
 */
export interface TenantAdmission {
  /** The tenant of a valid bearer token, else undefined (the auth guard refuses the request later). */
  tenantOf(request: FastifyRequest): Promise<string | undefined>;
  /** The tenant's quota of requests in progress (running or waiting), all classes together. */
  concurrencyLimit(tenant: string): Promise<number>;
  /** The error a request over that quota is refused with (429, Retry-After). */
  refuse(tenant: string, limit: number): DomainError & { retryAfterSeconds?: number };
}

/**
 * Admission control for every route: the first hook of a request, before
 * its body is read. A request over its tenant's concurrency quota gets 429
 * `QUOTA.CONCURRENT_REQUESTS`; a shed request gets 503 `SERVER.OVERLOADED`;
 * both with `Retry-After`, as problem+json (as a GraphQL response on
 * /graphql). A slot is released when the response is finished or the
 * connection closes, whichever comes first.
 */
export function registerAdmission(
  fastify: FastifyInstance,
  limits: AdmissionLimits,
  tenants?: TenantAdmission,
): { gates: Record<RequestClass, AdmissionGate>; active: Map<string, number> } {
  const gates: Record<RequestClass, AdmissionGate> = {
    recall: new AdmissionGate(limits),
    ingest: new AdmissionGate(limits),
    other: new AdmissionGate(limits),
  };
  // Requests of each tenant in progress (waiting or running), whatever their class.
  const active = new Map<string, number>();
  const retryAfterSeconds = Math.max(1, Math.ceil(limits.maxQueueWaitMs / 1000));
  const refuse = (request: FastifyRequest, reply: FastifyReply, error: DomainError, status: number, retryAfter: number) => {
    void reply.header('retry-after', String(retryAfter));
    // Not logged one by one: under overload that would add a write per refused request.
    if (request.routeOptions.url === '/graphql') sendGraphqlRequestError(request, reply, error, status);
    else sendProblem(request, reply, error, () => undefined);
    return reply;
  };
  fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const kind = requestClass(request.method, request.url);
    if (kind === null) return;
    const tenant = (await tenants?.tenantOf(request).catch(() => undefined)) ?? ANONYMOUS;
    if (tenants && tenant !== ANONYMOUS) {
      const limit = await tenants.concurrencyLimit(tenant);
      if ((active.get(tenant) ?? 0) >= limit) {
        const error = tenants.refuse(tenant, limit);
        return refuse(request, reply, error, 429, error.retryAfterSeconds ?? 1);
      }
    }
    active.set(tenant, (active.get(tenant) ?? 0) + 1);
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      const n = (active.get(tenant) ?? 1) - 1;
      if (n > 0) active.set(tenant, n);
      else active.delete(tenant);
    };
    const release = await gates[kind].enter(tenant);
    if (!release) {
      leave();
      return refuse(request, reply, new Overloaded(kind, retryAfterSeconds), 503, retryAfterSeconds);
    }
    const done = () => {
      release();
      leave();
    };
    if (reply.raw.destroyed) {
      done();
      return;
    }
    reply.raw.once('close', done);
  });
  return { gates, active };
}
