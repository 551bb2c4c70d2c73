import type { DataDirOwnerInfo, ElmaConfig, TemporalTls } from '@elma/infra';

/** Where a command that talks to Temporal connects, and as what: one rule for every such command. */
export interface TemporalTarget {
  address: string;
  namespace: string;
  taskQueue: string;
  tls?: TemporalTls;
}

/**
 * TEMPORAL_ADDRESS, else an explicit TEMPORAL_PORT on this machine, else the dev server of the `elma start`
 * that owns (or last owned) the data folder, as it recorded in owner.json (so a command works unchanged next
 * to an `npm start` on other ports), else the default port; with TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE and
 * the TEMPORAL_TLS_* files as the configuration parsed them.
 */
export function temporalTargetOf(
  config: Pick<ElmaConfig, 'temporal'>,
  env: NodeJS.ProcessEnv,
  owner: DataDirOwnerInfo | undefined,
): TemporalTarget {
  return {
    address: temporalAddressOf(config, env, owner),
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...(config.temporal.tls ? { tls: config.temporal.tls } : {}),
  };
}

export function temporalAddressOf(
  config: Pick<ElmaConfig, 'temporal'>,
  env: NodeJS.ProcessEnv,
  owner: DataDirOwnerInfo | undefined,
): string {
  if (config.temporal.address) return config.temporal.address;
  const port =
    (env.TEMPORAL_PORT === undefined || env.TEMPORAL_PORT === '') && owner?.command === 'elma start' && owner.ports.temporal
      ? owner.ports.temporal
      : config.temporal.port;
  return `127.0.0.1:${port}`;
}

/** Nothing answered at Temporal's address. The CLI prints the message alone (no stack) and exits 1. */
export class TemporalUnreachable extends Error {
  constructor(
    readonly address: string,
    readonly reason: string,
  ) {
    super(`cannot reach Temporal at ${address} (${reason}): is elma running? set TEMPORAL_ADDRESS or TEMPORAL_PORT`);
    this.name = 'TemporalUnreachable';
  }
}

/**
 * Whether an error of the Temporal SDK means the front end could not be reached (as opposed to a workflow
 * that failed): the client's connect deadline, the native connection's transport error, gRPC UNAVAILABLE.
 */
export function connectionFailureOf(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (/ConnectionRefused|ECONNREFUSED/.test(e.message)) return 'ECONNREFUSED';
    if (/Failed to connect before the deadline/.test(e.message)) return 'no answer before the connect deadline';
    if (e.name === 'TransportError' || /tcp connect error|dns error/i.test(e.message)) return 'transport error';
    if (code === 14) return 'UNAVAILABLE';
  }
  return undefined;
}

/** Rethrows a connection failure as `TemporalUnreachable` naming `address`; anything else unchanged. */
export function rethrowUnreachable(error: unknown, address: string): never {
  const reason = connectionFailureOf(error);
  throw reason ? new TemporalUnreachable(address, reason) : error;
}
