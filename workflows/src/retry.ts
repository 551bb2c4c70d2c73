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
