import { ApplicationFailure } from '@temporalio/activity';
import { DomainError } from '@elma/domain';

/**
 * Runs an activity body, turning domain errors (bad input, a rule said no) into non-retryable failures
 * typed by their stable code. Anything else is infrastructure and is rethrown for Temporal to retry.
 * Only the code and message cross over: domain messages carry ids, never content.
 */
export async function withDomainFailures<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof DomainError) {
      throw ApplicationFailure.create({ type: err.code, message: err.message, nonRetryable: true });
    }
    throw err;
  }
}
