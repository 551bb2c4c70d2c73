import type { FastifyInstance } from 'fastify';
import type { StoredUsageCounter, TenantQuotas } from '@elma/application';
import { Registry, renderMetrics, sampledFamily, type Sample } from '@elma/infra';
import type { Elma } from '@elma/runtime';
import { ANONYMOUS, type AdmissionGate, type RequestClass } from './admission';

/** What /metrics reads besides the process's own families: admission, quotas, stored usage, the projection, the index, Temporal. */
export interface MetricSources {
  elma: Pick<Elma, 'metrics' | 'runner' | 'index'>;
  gates: Record<RequestClass, AdmissionGate>;
  active: Map<string, number>;
  quotas: TenantQuotas;
  usage: StoredUsageCounter;
  /** Erasures by status, as Temporal's visibility holds them; absent without Temporal. */
  erasuresByStatus?: () => Promise<Record<string, number>>;
}

/**
 * The API's families read at scrape time, in a registry of their own (the
 * process's registry holds what is counted as it happens). Label values are
 * tenant ids, quota names, request classes and statuses: never a subject, a
 * pseudonym or any content. The admission and quota families keep the names
 * and labels they had before prom-client, so existing scrapes keep working.
 */
export function apiMetricFamilies(sources: MetricSources): Registry {
  const registry = new Registry();
  const classes = () => Object.entries(sources.gates) as [RequestClass, AdmissionGate][];
  const family = (name: string, type: 'gauge' | 'counter', help: string, labelNames: string[], read: () => Sample[] | Promise<Sample[]>) =>
    sampledFamily(registry, { name, type, help, labelNames }, read);

  family('elma_admission_inflight', 'gauge', 'Requests being handled, by request class.', ['class'], () =>
    classes().map(([c, g]) => [{ class: c }, g.state.inflight]),
  );
  family('elma_admission_waiting', 'gauge', 'Requests waiting for a slot, by request class.', ['class'], () =>
    classes().map(([c, g]) => [{ class: c }, g.state.waiting]),
  );
  family('elma_admission_shed_total', 'counter', 'Requests refused with 503 SERVER.OVERLOADED, by request class.', ['class'], () =>
    classes().map(([c, g]) => [{ class: c }, g.shed]),
  );
  family(
    'elma_quota_refusals_total',
    'counter',
    'Requests refused by a tenant quota, by tenant and quota (ingest_rate, recall_rate, concurrent_requests, stored_memories, stored_bytes, batch_exceeds_burst).',
    ['tenant', 'quota'],
    () => sources.quotas.refusals().map(({ tenant, quota, count }) => [{ tenant, quota }, count]),
  );
  family(
    'elma_quota_requests_in_progress',
    'gauge',
    "A tenant's API requests in progress (running or waiting), against its concurrent_requests quota.",
    ['tenant'],
    () => [...sources.active].filter(([t]) => t !== ANONYMOUS).map(([tenant, n]) => [{ tenant }, n]),
  );
  family(
    'elma_quota_stored_memories',
    'gauge',
    'Memory records a tenant stores: as last counted from the index, plus writes admitted since.',
    ['tenant'],
    () => sources.usage.known().map(([tenant, u]) => [{ tenant }, u.memories]),
  );
  family(
    'elma_quota_stored_bytes',
    'gauge',
    'Bytes of memory content a tenant stores: as last counted from the index, plus writes admitted since.',
    ['tenant'],
    () => sources.usage.known().map(([tenant, u]) => [{ tenant }, u.bytes]),
  );
  family(
    'elma_quota_limit',
    'gauge',
    "A tenant's quota, by quota (rates per second), for the tenants this process has seen.",
    ['tenant', 'quota'],
    () => quotaLimits(sources),
  );

  // One read of the log per scrape serves both projection families.
  let lag: Promise<{ events: number; seconds: number }> | undefined;
  const projectionLag = () => (lag ??= sources.elma.runner.lag(Date.now()).finally(() => setImmediate(() => (lag = undefined))));
  family(
    'elma_projection_lag_events',
    'gauge',
    'Events of the memory streams appended to the log and not yet in the views (counted up to 10,000).',
    [],
    async () => [[{}, (await projectionLag()).events]],
  );
  family(
    'elma_projection_lag_seconds',
    'gauge',
    'Age of the oldest event not yet in the views; 0 when the projection has caught up.',
    [],
    async () => [[{}, (await projectionLag()).seconds]],
  );

  let embedding: ReturnType<Elma['index']['embeddingLag']> | undefined;
  const embeddingLag = () => (embedding ??= sources.elma.index.embeddingLag().finally(() => setImmediate(() => (embedding = undefined))));
  family(
    'elma_embedding_lag_records',
    'gauge',
    'Records BM25 already finds and the dense route not yet (waiting for their vector).',
    [],
    async () => [[{}, (await embeddingLag()).pending]],
  );
  family('elma_embedding_lag_seconds', 'gauge', 'Age of the oldest record waiting for its vector; 0 when none waits.', [], async () => {
    const oldest = (await embeddingLag()).oldestPendingAt;
    return [[{}, oldest ? Math.max(0, (Date.now() - Date.parse(oldest)) / 1000) : 0]];
  });

  const erasuresByStatus = sources.erasuresByStatus;
  if (erasuresByStatus) {
    family(
      'elma_erasures',
      'gauge',
      "Erasure workflows by status (running, awaiting_approval, completed, denied, approval_timed_out, verification_failed, failed), as Temporal's visibility holds them (closed ones until the namespace's retention).",
      ['status'],
      async () => Object.entries(await erasuresByStatus()).map(([status, n]) => [{ status }, n]),
    );
  }
  return registry;
}

async function quotaLimits(sources: MetricSources): Promise<Sample[]> {
  const tenants = new Set<string>([...sources.active.keys(), ...sources.usage.known().map(([t]) => t), ...sources.quotas.tenants()]);
  tenants.delete(ANONYMOUS);
  const limits = await Promise.all(
    [...tenants].sort().map(async (tenant) => [tenant, await sources.quotas.limits(tenant).catch(() => undefined)] as const),
  );
  return limits.flatMap(([tenant, l]): Sample[] =>
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
  );
}

/** GET /metrics, unauthenticated like /health (a scraper has no token) and never shed by admission. */
export function registerMetrics(fastify: FastifyInstance, sources: MetricSources): void {
  const registries = [sources.elma.metrics.registry, apiMetricFamilies(sources)];
  fastify.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await renderMetrics(registries);
    void reply.header('content-type', contentType);
    return body;
  });
}
