import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PLATFORM_TENANT, type Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, systemClock, uuidSource, type Elma } from '@elma/runtime';
import { OffboardingRequests } from './offboarding-requests';
import { OffboardingStore } from './offboarding-store';
import { TenantClosures } from './tenant-closures';

const ops = (sub: string): Principal => ({ tenant: PLATFORM_TENANT, sub, roles: ['platform-admin'], purposes: [], clearance: 'internal' });
const at = () => ({ attempt: 1, startedAt: new Date().toISOString() });

describe('off-boarding steps on real SQLite files', () => {
  let dir: string;
  let elma: Elma;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'elma-offboard-steps-'));
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir }), { logger: silentLogger });
  });
  afterEach(async () => {
    await elma.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function approvedRequest(tenant: string): Promise<string> {
    const { requestId } = await elma.offboarding.requests.request(ops('ops-1'), tenant, { reason: 'contract_ended' }, 'req-1');
    await elma.offboarding.requests.approve(ops('ops-2'), tenant, requestId, 'req-2');
    return requestId;
  }

  it('given a hold placed after the approval, when the workflow checks, then it stops before destroying anything and lifts the seal', async () => {
    const requestId = await approvedRequest('acme');
    await elma.holds.place('acme', 'legal-1', { scope: { subjects: ['cust-1'] }, reason: 'matter 17' });
    await elma.offboarding.steps.seal('acme', requestId, at());
    expect(await elma.offboarding.closures.closure('acme', { fresh: true })).toBe('sealed');

    await expect(elma.offboarding.steps.legalHoldCheck('acme', requestId, at())).rejects.toMatchObject({
      code: 'OFFBOARD.BLOCKED_BY_LEGAL_HOLD',
    });
    expect(await elma.offboarding.closures.closure('acme', { fresh: true })).toBeUndefined();
    expect(await elma.vault.isShredded('acme', 'anything')).toBe(false);
    const state = await elma.offboarding.requests.follow(ops('ops-1'), 'acme', requestId, 'req-3');
    expect(state.failure?.code).toBe('OFFBOARD.BLOCKED_BY_LEGAL_HOLD');
    // Not approvable again: a new request is needed once the hold is released.
    await expect(elma.offboarding.requests.approve(ops('ops-3'), 'acme', requestId, 'req-4')).rejects.toMatchObject({
      code: 'OFFBOARD.NOT_AWAITING_APPROVAL',
    });
  });

  it('given a failure after the key was destroyed, then the tenant stays closed until a new off-boarding certifies it', async () => {
    const requestId = await approvedRequest('beta');
    await elma.offboarding.steps.seal('beta', requestId, at());
    await elma.offboarding.steps.legalHoldCheck('beta', requestId, at());
    await elma.offboarding.steps.export('beta', requestId, at());
    await elma.offboarding.steps.destroyKey('beta', requestId, at());
    // While it runs, nobody can ask again.
    await expect(elma.offboarding.requests.request(ops('ops-1'), 'beta', { reason: 'contract_ended' }, 'r')).rejects.toMatchObject({
      code: 'OFFBOARD.TENANT_CLOSED',
    });
    await elma.offboarding.steps.fail('beta', requestId, 'OFFBOARD.VERIFICATION_FAILED');
    expect(await elma.offboarding.closures.closure('beta', { fresh: true })).toBe('sealed');
    // Failed after the key was gone: a new off-boarding may finish the job and certify it.
    const retry = await elma.offboarding.requests.request(ops('ops-1'), 'beta', { reason: 'contract_ended' }, 'r');
    await elma.offboarding.requests.approve(ops('ops-2'), 'beta', retry.requestId, 'r');
    for (const step of ['seal', 'legalHoldCheck', 'export', 'destroyKey', 'dropIndex', 'deleteStreams'] as const)
      await elma.offboarding.steps[step]('beta', retry.requestId, at());
    const verification = await elma.offboarding.steps.verify('beta', retry.requestId, 1, at());
    expect(verification.passed).toBe(true);
    await elma.offboarding.steps.certify('beta', retry.requestId, { verification, rounds: 1 });
    expect(await elma.offboarding.closures.closure('beta', { fresh: true })).toBe('offboarded');
  });

  it('given two approvals by the same two admins, then only one is stored and the requester can never approve', async () => {
    const { requestId } = await elma.offboarding.requests.request(ops('ops-1'), 'gamma', { reason: 'customer_request' }, 'r');
    await expect(elma.offboarding.requests.approve(ops('ops-1'), 'gamma', requestId, 'r')).rejects.toMatchObject({
      code: 'OFFBOARD.SELF_APPROVAL',
    });
    const [a, b] = await Promise.allSettled([
      elma.offboarding.requests.approve(ops('ops-2'), 'gamma', requestId, 'r'),
      elma.offboarding.requests.approve(ops('ops-3'), 'gamma', requestId, 'r'),
    ]);
    expect([a.status, b.status].sort()).toEqual(['fulfilled', 'rejected']);
  });

  it('given a worker without an export folder, when an export was asked, then it stops before destroying and lifts the seal', async () => {
    // The API of another process accepted the export (it has a folder); this worker has none.
    const api = new OffboardingRequests({
      store: new OffboardingStore({ log: elma.log }),
      closures: new TenantClosures({ log: elma.log }),
      holds: elma.holds,
      audit: elma.audit,
      clock: systemClock,
      ids: uuidSource,
      exportDir: join(dir, '..', 'exports-elsewhere'),
    });
    const { requestId } = await api.request(ops('ops-1'), 'epsilon', { reason: 'contract_ended', export: true }, 'r');
    await elma.offboarding.requests.approve(ops('ops-2'), 'epsilon', requestId, 'r');
    await elma.offboarding.steps.seal('epsilon', requestId, at());
    await elma.offboarding.steps.legalHoldCheck('epsilon', requestId, at());
    await expect(elma.offboarding.steps.export('epsilon', requestId, at())).rejects.toMatchObject({
      code: 'OFFBOARD.EXPORT_NOT_CONFIGURED',
    });
    await elma.offboarding.steps.fail('epsilon', requestId, 'OFFBOARD.EXPORT_NOT_CONFIGURED');
    expect(await elma.offboarding.closures.closure('epsilon', { fresh: true })).toBeUndefined();
  });

  it('a closure made by one process is seen by another within its refresh interval', async () => {
    const other = new TenantClosures({ log: elma.log, refreshMs: 0 });
    expect(await other.closure('delta')).toBeUndefined();
    await elma.offboarding.closures.seal('delta', 'off_x', new Date().toISOString());
    expect(await other.closure('delta')).toBe('sealed');
    await elma.offboarding.closures.offboarded('delta', 'off_x', new Date().toISOString());
    await elma.offboarding.closures.unseal('delta', 'off_x', new Date().toISOString());
    expect(await other.closure('delta')).toBe('offboarded');
  });
});
