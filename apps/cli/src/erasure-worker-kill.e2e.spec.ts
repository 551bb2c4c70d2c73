import { afterAll, describe, expect, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { ERASURE_STEPS, type Principal } from '@elma/domain';
import { verifySignedCertificate } from '@elma/infra';
import { approveErasure, erasureProgress, erasureResult, startErasure } from '@elma/worker';
import { requestSubjectErasure, workerSuite } from '../../../tests/support/elma-process';

/**
 * Kill the worker in the middle of an erasure; a new worker
 * finishes it, with no step done twice in effect and the same certificate.
 * The workers are real `elma worker` processes; the first one dies by SIGKILL
 * while the workflow waits for approval, after four steps have run.
 */
describe('an erasure survives the death of its worker', () => {
  const { taskQueue, address, spawnWorker, withElma } = workerSuite('kill', 60_000);
  const principal: Principal = { tenant: 'acme', sub: 'dpo-1', roles: ['dpo', 'agent'], purposes: ['support'], clearance: 'restricted' };
  let connection: Connection;

  afterAll(async () => {
    await connection?.close();
  });

  it('finishes on a new worker with each step once and a certificate that verifies', async () => {
    const requestId = await withElma(async (elma) => {
      await elma.runner.start();
      return requestSubjectErasure(elma, principal, 'cust-kill', [
        'first note about the Ravensworth contract',
        'second note: Ravensworth prefers email',
        'third note',
      ]);
    });
    connection = await Connection.connect({ address });
    const client = { connection, taskQueue };

    const first = await spawnWorker();
    await startErasure(client, { tenant: 'acme', requestId, reason: 'subject_request' });
    for (let i = 0; (await erasureProgress(client, 'acme', requestId))?.status !== 'awaiting_approval'; i++) {
      if (i > 600) throw new Error('never reached the approval step');
      await new Promise((r) => setTimeout(r, 100));
    }
    process.kill(-first.pid!, 'SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));

    await spawnWorker();
    await approveErasure(client, 'acme', requestId, 'dpo-1');
    const result = await erasureResult(client, 'acme', requestId);
    expect(result.erased).toBe(3);

    const progress = (await erasureProgress(client, 'acme', requestId))!;
    expect(progress.status).toBe('completed');
    // The steps before the kill ran once, on the first worker: the new worker replayed them from history.
    expect(progress.steps.map((s) => s.step)).toEqual([...ERASURE_STEPS]);
    expect(progress.steps.every((s) => s.attempts === 1)).toBe(true);

    await withElma(async (elma) => {
      const stored = (await elma.erasure.store.certificate('acme', requestId))!;
      expect(verifySignedCertificate(stored, elma.signer.jwks())).toMatchObject({ ok: true });
      expect(stored.signature.value).toBe(result.signature);
      expect(stored.certificate.request.approvedBy).toBe('dpo-1');
      // One audit entry per step: none was done twice in effect.
      const perStep = new Map<string, number>();
      for await (const entry of elma.audit.export('acme', { resourceId: `erasure/${requestId}` })) {
        const step = entry.resourceIds.find((r) => r.startsWith('step/'));
        if (step) perStep.set(step, (perStep.get(step) ?? 0) + 1);
      }
      expect([...perStep.values()].every((n) => n === 1)).toBe(true);
      expect(perStep.size).toBe(12);
      // Running the last step again (a retry after a crash) returns the same certificate.
      const again = await elma.erasure.certification.certify(
        'acme',
        requestId,
        {
          set: { recordIds: [], eventIds: [] },
          held: [],
          verification: stored.certificate.verification,
          approvedBy: null,
          approvedAt: null,
          streamsDeleted: 0,
          tombstones: 0,
        },
        { attempt: 2, startedAt: new Date().toISOString() },
      );
      expect(again.signature).toBe(stored.signature.value);
      expect(await elma.erasure.store.certificate('acme', requestId)).toEqual(stored);
    });
  }, 180_000);
});
