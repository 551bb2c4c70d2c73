import type { Connection } from '@temporalio/client';
import type { ActivityDeps } from '@elma/activities';
import type { ElmaConfig } from '@elma/infra';
import type { Elma } from '@elma/runtime';
import {
  ensureConsolidationSchedule,
  ensureRetentionSchedule,
  startConsolidation,
  temporalErasureWorkflows,
  temporalSubjectAccessWorkflows,
  type ElmaClientOptions,
} from './client';
import { createElmaWorker, type ElmaWorker, type ElmaWorkerOptions } from './worker';

/*
 * The parts every process that runs ELMA with Temporal assembles the same way
 * (`elma start`, `elma worker`, the API test app, the bench): a worker on an
 * opened ELMA, and an opened ELMA wired to Temporal through a client. Each
 * caller keeps only what differs (supervision, schedules, its own task queue).
 */

/** What the activities run on, taken from an opened ELMA. */
export function workerDeps(
  elma: Pick<Elma, 'views' | 'erasure' | 'consolidation'> & Partial<Pick<Elma, 'offboarding' | 'subjectAccess'>>,
): ActivityDeps {
  return {
    views: elma.views,
    erasure: elma.erasure,
    consolidation: elma.consolidation,
    offboarding: elma.offboarding?.steps,
    ...(elma.subjectAccess ? { subjectAccess: elma.subjectAccess } : {}),
  };
}

/** The Temporal server, mTLS, namespace and task queue the configuration names, as worker options. */
export function configuredWorkerOptions(
  config: ElmaConfig,
  address: string,
): Pick<ElmaWorkerOptions, 'address' | 'tls' | 'namespace' | 'taskQueue' | 'metricsListen'> {
  const metricsPort = config.telemetry.workerMetricsPort;
  return {
    address,
    tls: config.temporal.tls,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...(metricsPort !== undefined ? { metricsListen: { host: config.host, port: metricsPort } } : {}),
  };
}

/** A worker (both task queues) whose activities run on `elma`, recording into its metrics. */
export function createWorkerFor(
  elma: Pick<Elma, 'views' | 'erasure' | 'consolidation'> & Partial<Pick<Elma, 'offboarding' | 'subjectAccess' | 'metrics'>>,
  options: Omit<ElmaWorkerOptions, 'deps'>,
): Promise<ElmaWorker> {
  return createElmaWorker({ ...(elma.metrics ? { metrics: elma.metrics } : {}), ...options, deps: workerDeps(elma) });
}

export interface TemporalWiring {
  /** Ensure the retention and consolidation schedules, every so many minutes (`elma start` does; tests do not). */
  schedules?: { retentionMinutes: number; consolidationMinutes: number };
  /** Start a tenant's triggered consolidation every so many events of a subject; no trigger when omitted. */
  consolidateEveryEvents?: number;
  /** A triggered consolidation that could not be started (it is not retried: the next trigger or the sweep picks it up). */
  onConsolidationStartError?: (error: unknown) => void;
}

/**
 * Wires an opened ELMA to Temporal through one client connection: the
 * schedules, the projection's consolidation trigger, and the erasure and
 * subject-access workflows the API drives (returned, for `createApi`).
 */
export async function wireTemporal(
  elma: Pick<Elma, 'projection'>,
  client: ElmaClientOptions & { connection: Connection },
  wiring: TemporalWiring = {},
): Promise<ReturnType<typeof temporalErasureWorkflows> & { subjectAccess: ReturnType<typeof temporalSubjectAccessWorkflows> }> {
  if (wiring.schedules) {
    await ensureRetentionSchedule(client, wiring.schedules.retentionMinutes);
    await ensureConsolidationSchedule(client, wiring.schedules.consolidationMinutes);
  }
  if (wiring.consolidateEveryEvents !== undefined) {
    const onError = wiring.onConsolidationStartError ?? (() => undefined);
    elma.projection.setConsolidationTrigger((tenant, subjectRef) => {
      startConsolidation(client, tenant, subjectRef).catch(onError);
    }, wiring.consolidateEveryEvents);
  }
  return { ...temporalErasureWorkflows(client), subjectAccess: temporalSubjectAccessWorkflows(client) };
}
