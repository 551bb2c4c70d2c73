import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Label values any ELMA metric may carry: route templates, methods, status
 * codes, problem codes, step names, request classes, quota names, and tenant
 * ids (organisations, `[a-z0-9_]` by the token schema). Never a data
 * subject's id, a pseudonym, another token claim or any content: metric
 * labels are outside erasure's reach, like logs.
 */
export type MetricLabels = Record<string, string | number>;

/** One sample of a family that is read when /metrics is scraped. */
export type Sample = [labels: MetricLabels, value: number];

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Erasure steps run from milliseconds (authorize) to minutes (a byte scan of a large data folder). */
const STEP_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];

/**
 * A process's Prometheus metrics (prom-client), one registry per opened ELMA
 * so that two in one process (tests) do not mix. The families written as
 * things happen are fields; families read at scrape time (lags, gauges of
 * other components) are added with `sampled`.
 */
export class ElmaMetrics {
  readonly registry = new Registry();

  /** HTTP requests by route template (never the raw URL), method and status code. */
  readonly httpRequests = new Counter({
    name: 'elma_http_requests_total',
    help: 'HTTP requests answered, by route template, method and status code.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'elma_http_request_duration_seconds',
    help: 'Time from receiving a request to sending its answer, by route template, method and status code.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  /** Error answers (problem+json) by their stable `code`. */
  readonly httpErrors = new Counter({
    name: 'elma_http_errors_total',
    help: 'Error answers (RFC 9457 problem+json), by route template, method, status code and problem code.',
    labelNames: ['route', 'method', 'status', 'code'] as const,
    registers: [this.registry],
  });

  /** Authenticated requests per tenant: the only per-caller label is the tenant id. */
  readonly tenantRequests = new Counter({
    name: 'elma_tenant_requests_total',
    help: 'Authenticated API requests, by tenant.',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });

  /** One observation per append of audit entries (a group commit of one tenant's pending entries). */
  readonly auditAppend = new Histogram({
    name: 'elma_audit_append_duration_seconds',
    help: "Time to append a batch of audit entries to a tenant's hash chain (retries after a concurrent append included).",
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly auditEntries = new Counter({
    name: 'elma_audit_entries_total',
    help: 'Audit entries appended.',
    registers: [this.registry],
  });

  /** Each attempt of an erasure step's activity in this process's worker. */
  readonly erasureSteps = new Histogram({
    name: 'elma_erasure_step_duration_seconds',
    help: "Duration of one attempt of an erasure step (a Temporal activity) in this process's worker, by step and outcome (ok, failed).",
    labelNames: ['step', 'outcome'] as const,
    buckets: STEP_BUCKETS,
    registers: [this.registry],
  });

  constructor(options: { processMetrics?: boolean } = {}) {
    // Node's own (CPU, memory, event loop lag, GC): no labels of ours.
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'elma_' });
  }
}

/**
 * Adds a family whose samples are read at each scrape. A source that fails
 * leaves the family without samples for that scrape (a scrape never fails
 * for one component).
 */
export function sampledFamily(
  registry: Registry,
  family: { name: string; help: string; type: 'gauge' | 'counter'; labelNames?: readonly string[] },
  read: () => Sample[] | Promise<Sample[]>,
): void {
  const common = { name: family.name, help: family.help, labelNames: [...(family.labelNames ?? [])], registers: [registry] };
  const samples = () =>
    Promise.resolve()
      .then(read)
      .catch((): Sample[] => []);
  if (family.type === 'gauge') {
    new Gauge({
      ...common,
      async collect() {
        const read = await samples();
        this.reset();
        for (const [labels, value] of read) this.set(labels, value);
      },
    });
  } else {
    new Counter({
      ...common,
      async collect() {
        const read = await samples();
        this.reset();
        for (const [labels, value] of read) this.inc(labels, value);
      },
    });
  }
}

/** The Prometheus text exposition of several registries (a process's own and its API's). */
export async function renderMetrics(registries: Registry[]): Promise<{ contentType: string; body: string }> {
  const merged = Registry.merge(registries);
  return { contentType: merged.contentType, body: await merged.metrics() };
}

export { Registry };
