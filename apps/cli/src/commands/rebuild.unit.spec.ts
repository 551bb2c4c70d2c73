import { describe, expect, it } from 'vitest';
import { loadTemporalConfig } from '@elma/infra';
import { temporalAddressOf, temporalTargetOf } from '../temporal-target';

const owner = {
  pid: 1,
  command: 'elma start',
  startedAt: '2026-12-03T00:00:00Z',
  ports: { api: 18700, temporal: 18701, temporalUi: 18702 },
};
const config = (env: Record<string, string> = {}) => loadTemporalConfig({ ELMA_DATA_DIR: '/tmp/elma-rebuild-unit', ...env });

describe('where elma rebuild finds Temporal', () => {
  it('uses the dev server of the elma start that owns the data folder, whatever its port', () => {
    expect(temporalAddressOf(config(), {}, owner)).toBe('127.0.0.1:18701');
  });

  it('prefers TEMPORAL_ADDRESS, then an explicit TEMPORAL_PORT, and falls back to the default port', () => {
    expect(temporalAddressOf(config({ TEMPORAL_ADDRESS: 'temporal:7233' }), {}, owner)).toBe('temporal:7233');
    expect(temporalAddressOf(config({ TEMPORAL_PORT: '9733' }), { TEMPORAL_PORT: '9733' }, owner)).toBe('127.0.0.1:9733');
    expect(temporalAddressOf(config(), {}, undefined)).toBe('127.0.0.1:7233');
    expect(temporalAddressOf(config(), {}, { ...owner, command: 'elma api' })).toBe('127.0.0.1:7233');
  });
});

describe('what every Temporal command connects as', () => {
  it('takes the namespace and task queue from TEMPORAL_NAMESPACE and TEMPORAL_TASK_QUEUE', () => {
    const target = temporalTargetOf(config({ TEMPORAL_NAMESPACE: 'ops', TEMPORAL_TASK_QUEUE: 'elma-eu' }), {}, owner);
    expect(target).toEqual({ address: '127.0.0.1:18701', namespace: 'ops', taskQueue: 'elma-eu' });
  });

  it('an empty TEMPORAL_PORT counts as unset', () => {
    expect(temporalAddressOf(config(), { TEMPORAL_PORT: '' }, owner)).toBe('127.0.0.1:18701');
  });
});
