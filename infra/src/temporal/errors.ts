import { DomainError } from '@elma/domain';

/** Temporal cannot be reached (not configured, down, or not answering within a call's deadline). Maps to 503. */
export class TemporalUnavailable extends DomainError {
  constructor(reason = 'erasures run on Temporal, which this API process is not connected to (set TEMPORAL_ADDRESS or use `elma start`)') {
    super('TEMPORAL.UNAVAILABLE', reason);
  }
}
