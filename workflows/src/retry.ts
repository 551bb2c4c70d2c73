import type { RetryPolicy } from '@temporalio/common';

/**
 * Retries for ELMA's idempotent activities: quick at first (a lost race, a
 * restarting engine), then spaced out; a domain refusal is non-retryable
 * whatever this says (the activity marks it so).
 */
export const ACTIVITY_RETRY: RetryPolicy = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '1 minute',
  maximumAttempts: 10,
};

/**
 * How long Temporal waits for a heartbeat before it counts the attempt lost
 * and retries it on another worker. Every ELMA activity heartbeats each
 * second while it runs, so this is the delay to notice a dead worker
 * (SIGKILL, OOM, a lost host), not a bound on the work; the start-to-close
 * timeouts bound a stuck attempt on a live worker. It leaves room for a
 * synchronous stretch (a SQLite transaction) that delays the heartbeat timer.
 */
export const HEARTBEAT_TIMEOUT = '15 seconds';
