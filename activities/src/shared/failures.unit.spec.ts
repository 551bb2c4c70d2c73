import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { DomainError, KeyShredded } from '@elma/domain';
import { withDomainFailures } from './failures';

describe('activity failures', () => {
  it('a key-management server down or sealed is retried, under its code', async () => {
    const failure = await withDomainFailures(async () => {
      throw new DomainError('KEY_VAULT.KMS_UNAVAILABLE', 'the key-management server is sealed', { reason: 'sealed' });
    }).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'KEY_VAULT.KMS_UNAVAILABLE', nonRetryable: false });
  });

  it('a rule that said no (a shredded key) is not retried', async () => {
    const failure = await withDomainFailures(async () => {
      throw new KeyShredded('m1');
    }).catch((error: unknown) => error);

    expect(failure).toMatchObject({ type: 'KEY_VAULT.KEY_SHREDDED', nonRetryable: true });
  });
});
