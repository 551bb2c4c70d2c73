import { DomainError } from '@elma/domain';

/** Why the key-management server could not serve a call. */
export type KmsFailure = 'unreachable' | 'sealed' | 'forbidden' | 'failed';

/**
 * The key-management server (OpenBao / Vault transit) cannot serve ELMA right now: down or not answering in
 * time, sealed, refusing ELMA's token, or answering with an error. Maps to 503 problem+json; the erasure
 * activities retry it. The message names the failure and what to check, never the token or a key.
 */
export class KmsUnavailable extends DomainError {
  constructor(
    readonly reason: KmsFailure,
    message: string,
  ) {
    super('KEY_VAULT.KMS_UNAVAILABLE', message, { reason });
  }
}
