import type { FastifyInstance } from 'fastify';
import type { StoredUsageCounter, TenantQuotas } from '@elma/application';
import { ANONYMOUS, type AdmissionGate, type RequestClass } from './admission';

/** What /metrics reads: the admission gates, each tenant's requests in progress, the quotas and the stored-usage counters. */
export interface MetricSources {
  gates: Record<RequestClass, AdmissionGate>;
  active: Map<string, number>;
  quotas: TenantQuotas;
  usage: StoredUsageCounter;
}

type Sample = [labels: Record<string, string>, value: number];

/**
 * One metric family in the Prometheus text format. Label values are tenant
 * ids (organisations, `[a-z0-9_]` by the token schema), quota names and
 * request classes: never a subject, a pseudonym or any content.
 */
function family(name: string, type: 'counter' | 'gauge', help: string, samples: Sample[]): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
  for (const [labels, value] of samples) {
    const text = Object.entries(labels)
      .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
      .join(',');
    lines.push(`${name}${text ? `{${text}}` : ''} ${value}`);
  }
  return lines.join('\n');
}

/** The metrics page in the Prometheus text exposition format (version 0.0.4). */
export async function renderMetrics(sources: MetricSources): Promise<string> {
  const classes = Object.entries(sources.gates) as [RequestClass, AdmissionGate][];
  const tenants = new Set<string>([...sources.active.keys(), ...sources.usage.known().map(([t]) => t), ...sources.quotas.tenants()]);
  tenants.delete(ANONYMOUS);
  const limits = await Promise.all(
    [...tenants].sort().map(async (tenant) => [tenant, await sources.quotas.limits(tenant).catch(() => undefined)] as const),
  );
  const usage = sources.usage.known().sort(([a], [b]) => a.localeCompare(b));
  return (
    [
      family(
        'elma_admission_inflight',
        'gauge',
        'Requests being handled, by request class.',
        classes.map(([c, g]) => [{ class: c }, g.state.inflight]),
      ),
      family(
        'elma_admission_waiting',
        'gauge',
        'Requests waiting for a slot, by request class.',
        classes.map(([c, g]) => [{ class: c }, g.state.waiting]),
      ),
      family(
        'elma_admission_shed_total',
        'counter',
        'Requests refused with 503 SERVER.OVERLOADED, by request class.',
        classes.map(([c, g]) => [{ class: c }, g.shed]),
      ),
      family(
        'elma_quota_refusals_total',
        'counter',
        'Requests refused by a tenant quota, by tenant and quota (ingest_rate, recall_rate, concurrent_requests, stored_memories, stored_bytes, batch_exceeds_burst).',
        sources.quotas.refusals().map(({ tenant, quota, count }) => [{ tenant, quota }, count]),
      ),
      family(
        'elma_quota_requests_in_progress',
        'gauge',
        "A tenant's API requests in progress (running or waiting), against its concurrent_requests quota.",
        [...sources.active].filter(([t]) => t !== ANONYMOUS).map(([tenant, n]) => [{ tenant }, n]),
      ),
      family(
        'elma_quota_stored_memories',
        'gauge',
        'Memory records a tenant stores: as last counted from the index, plus writes admitted since.',
        usage.map(([tenant, u]) => [{ tenant }, u.memories]),
      ),
      family(
        'elma_quota_stored_bytes',
        'gauge',
        'Bytes of memory content a tenant stores: as last counted from the index, plus writes admitted since.',
        usage.map(([tenant, u]) => [{ tenant }, u.bytes]),
      ),
      family(
        'elma_quota_limit',
        'gauge',
        "A tenant's quota, by quota (rates per second), for the tenants this process has seen.",
        limits.flatMap(([tenant, l]): Sample[] =>
          l
            ? [
                [{ tenant, quota: 'ingest_events_per_second' }, l.ingest.ratePerSecond],
                [{ tenant, quota: 'ingest_burst' }, l.ingest.burst],
                [{ tenant, quota: 'recall_requests_per_second' }, l.recall.ratePerSecond],
                [{ tenant, quota: 'recall_burst' }, l.recall.burst],
                [{ tenant, quota: 'stored_memories' }, l.storedMemories],
                [{ tenant, quota: 'stored_bytes' }, l.storedBytes],
                [{ tenant, quota: 'concurrent_requests' }, l.concurrentRequests],
              ]
            : [],
        ),
      ),
    ].join('\n') + '\n'
  );
}

/** GET /metrics, unauthenticated like /health (a scraper has no token) and never shed by admission. */
export function registerMetrics(fastify: FastifyInstance, sources: MetricSources): void {
  fastify.get('/metrics', async (_request, reply) => {
    void reply.header('content-type', 'text/plain; version=0.0.4; charset=utf-8');
    return renderMetrics(sources);
  });
}
