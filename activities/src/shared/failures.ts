import { ApplicationFailure } from '@temporalio/activity';
import { DomainError } from '@elma/domain';
import { heartbeating } from './heartbeat';

/**
 * Domain errors that describe a passing state (a lagging projection, a lost optimistic race, a KMS down or sealed, the index
 * thread started again): worth a retry.
 */
const RETRYABLE: readonly string[] = [
  'PROJECTION.LAGGING',
  'EVENT_LOG.WRONG_EXPECTED_VERSION',
  'KEY_VAULT.KMS_UNAVAILABLE',
  'INDEX.UNAVAILABLE',
];

/**
 * Runs an activity body (heartbeating while it runs), turning domain errors (bad input, a rule said no) into non-retryable failures
 * typed by their stable code. Anything else is infrastructure and is retried, under its name only.
 * Only the code and message cross over: domain messages carry ids, never content.
 */
export async function withDomainFailures<T>(body: () => Promise<T>, options: { retryable?: readonly string[] } = {}): Promise<T> {
  try {
    // Every ELMA activity heartbeats: the workflows set a heartbeat timeout on all of them.
    return await heartbeating(body);
  } catch (err) {
    if (err instanceof DomainError && !RETRYABLE.includes(err.code) && !options.retryable?.includes(err.code)) {
      throw ApplicationFailure.create({ type: err.code, message: err.message, nonRetryable: true });
    }
    if (err instanceof DomainError) throw ApplicationFailure.create({ type: err.code, message: err.message });
    // Other messages are not ours to vouch for (a parser quotes its input): only the error's name and code
    // enter the workflow history, which erasure cannot reach.
    const { name, code } = err as { name?: string; code?: unknown };
    throw ApplicationFailure.create({
      type: name ?? 'Error',
      message: `${name ?? 'Error'}${typeof code === 'string' ? ` (${code})` : ''}: retrying`,
    });
  }
}
