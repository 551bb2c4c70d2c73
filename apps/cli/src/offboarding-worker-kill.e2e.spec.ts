import { join } from 'node:path';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { OFFBOARD_STEPS, PLATFORM_TENANT, streams, type Principal } from '@elma/domain';
import { SqliteEventLog, verifySignedOffboardingCertificate } from '@elma/infra';
import { offboardingResult, startOffboarding } from '@elma/worker';
import { workerSuite } from '../../../tests/support/elma-process';

/**
 * Kill the worker in the middle of an off-boarding (SIGKILL, after the tenant was sealed and before anything
 * was destroyed); a new worker finishes it, each step done once, with a certificate that verifies.
 */
describe('an off-boarding survives the death of its worker', () => {
  const { dataDir, taskQueue, address, spawnWorker, withElma } = workerSuite('offboard-kill', 60_000);
  const ops = (sub: string): Principal => ({
    tenant: PLATFORM_TENANT,
    sub,
    roles: ['platform-admin'],
    purposes: [],
    clearance: 'internal',
  });
  const agent: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };
  const canary = 'Kill-test canary Vellichor-Abernathy 4471 lives in the cedar chest';
  let connection: Connection;

  afterAll(async () => {
    await connection?.close();
  });

  /** The step records of the off-boarding stream, read straight from the log file (the worker owns nothing else). */
  async function recordedSteps(requestId: string): Promise<string[]> {
    const log = SqliteEventLog.open(join(dataDir, 'events.db'));
    try {
      const steps: string[] = [];
      for await (const event of log.readStream(streams.offboarding('acme', requestId)))
        if (event.type === 'OffboardingStepCompleted') steps.push((event.data as { step: string }).step);
      return steps;
    } finally {
      await log.close();
    }
  }

  it('finishes on a new worker with each step once and a certificate that verifies', async () => {
    const requestId = await withElma(async (elma) => {
      await elma.runner.start();
      const { position } = await elma.ingest.ingest(agent, {
        events: [canary, 'second note for the kill test', '第三条记录：雪松木箱'].map((text) => ({
          subject: 'cust-kill',
          occurredAt: '2026-11-20T10:00:00Z',
          activity: 'chat.turn',
          content: { text },
          source: { system: 'crm', channel: 'chat' },
        })),
      });
      await elma.runner.waitFor(BigInt(position));
      const { requestId } = await elma.offboarding.requests.request(ops('ops-1'), 'acme', { reason: 'contract_ended' }, 'test');
      await elma.offboarding.requests.approve(ops('ops-2'), 'acme', requestId, 'test');
      return requestId;
    });
    connection = await Connection.connect({ address });
    const client = { connection, taskQueue };

    const first = await spawnWorker();
    await startOffboarding(client, { tenant: 'acme', requestId });
    // Sealed: the workflow now waits a few seconds before it reads or destroys anything. Kill it there.
    for (let i = 0; !(await recordedSteps(requestId)).includes('seal'); i++) {
      if (i > 600) throw new Error('never sealed');
      await new Promise((r) => setTimeout(r, 100));
    }
    process.kill(-first.pid!, 'SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    expect(await recordedSteps(requestId)).toEqual(['seal']);

    await spawnWorker();
    const result = await offboardingResult(client, 'acme', requestId);
    expect(result.requestId).toBe(requestId);
    expect(await recordedSteps(requestId)).toEqual(OFFBOARD_STEPS.filter((s) => s !== 'certify'));

    await withElma(async (elma) => {
      const stored = await elma.offboarding.requests.certificate(ops('ops-1'), 'acme', requestId, 'test');
      expect(verifySignedOffboardingCertificate(stored, elma.signer.jwks())).toMatchObject({ ok: true });
      expect(stored.signature.value).toBe(result.signature);
      expect(stored.certificate.destroyed.records).toBeGreaterThanOrEqual(3);
      expect(stored.certificate.steps.every((s) => s.attempts === 1)).toBe(true);
      const perStep = new Map<string, number>();
      for await (const entry of elma.audit.export(PLATFORM_TENANT, { resourceId: requestId })) {
        const step = entry.resourceIds.find((r) => r.startsWith('step/'));
        if (step) perStep.set(step, (perStep.get(step) ?? 0) + 1);
      }
      expect(perStep.size).toBe(7);
      expect([...perStep.values()].every((n) => n === 1)).toBe(true);
      expect(await elma.index.tenants()).not.toContain('acme');
    });
    const bytes = Buffer.from('Vellichor-Abernathy', 'utf8');
    const hits: string[] = [];
    const walk = (d: string) => {
      for (const name of readdirSync(d)) {
        const path = join(d, name);
        const stat = statSync(path, { throwIfNoEntry: false });
        if (stat?.isDirectory()) walk(path);
        else if (stat?.isFile() && readFileSync(path).includes(bytes)) hits.push(path);
      }
    };
    walk(dataDir);
    expect(hits).toEqual([]);
  }, 240_000);
});
