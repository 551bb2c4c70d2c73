import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { createReindexActivities, type TenantViews } from './activities';

function recordingViews(): TenantViews & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async drop(tenant) {
      calls.push(`drop:${tenant}`);
      return 2;
    },
    async replay(tenant) {
      calls.push(`replay:${tenant}`);
      return { events: 5, memories: 3 };
    },
    strategy: () => 'alias_swap',
    async rebuildBeside(tenant) {
      calls.push(`rebuildBeside:${tenant}`);
      return { dropped: 2, events: 5, memories: 3, swap: { from: 'old', to: 'new' } };
    },
  };
}

describe('reindex activities', () => {
  it('pass a valid tenant through to its views and return their counts', async () => {
    const views = recordingViews();
    const activities = createReindexActivities({ views });

    expect(await activities.dropTenantViews('acme')).toBe(2);
    expect(await activities.replayTenantLog('acme')).toEqual({ events: 5, memories: 3 });
    expect(await activities.tenantViewsStrategy()).toBe('alias_swap');
    expect(await activities.rebuildTenantViewsBeside('acme')).toEqual({
      dropped: 2,
      events: 5,
      memories: 3,
      swap: { from: 'old', to: 'new' },
    });
    expect(views.calls).toEqual(['drop:acme', 'replay:acme', 'rebuildBeside:acme']);
  });

  it.each(['', 'Acme', 'acme-corp', '_acme', 'a'.repeat(64)])(
    'reject the malformed tenant %j as non-retryable, touching no view',
    async (tenant) => {
      const views = recordingViews();
      const activities = createReindexActivities({ views });

      for (const call of [
        () => activities.dropTenantViews(tenant),
        () => activities.replayTenantLog(tenant),
        () => activities.rebuildTenantViewsBeside(tenant),
      ]) {
        const error = await call().catch((err: unknown) => err);
        expect(error).toBeInstanceOf(ApplicationFailure);
        expect(error).toMatchObject({ type: 'REQUEST.VALIDATION_FAILED', nonRetryable: true });
      }
      expect(views.calls).toEqual([]);
    },
  );

  it('retry infrastructure errors under their name only, never their message (it may quote content)', async () => {
    const outage = Object.assign(new SyntaxError('Unexpected token in JSON: "Alice\'s passport P1234567"'), { code: 'EIO' });
    const activities = createReindexActivities({
      views: {
        drop: async () => Promise.reject(outage),
        replay: async () => ({ events: 0, memories: 0 }),
        strategy: () => 'in_place',
        rebuildBeside: async () => Promise.reject(outage),
      },
    });

    const error = await activities.dropTenantViews('acme').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ type: 'SyntaxError', nonRetryable: false });
    expect((error as Error).message).toBe('SyntaxError (EIO): retrying');
  });
});
