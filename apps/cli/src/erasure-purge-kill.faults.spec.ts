import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { Principal } from '@elma/domain';
import { listFiles, scanFiles } from '@elma/infra';
import { erasureProgress, erasureResult, startErasure } from '@elma/worker';
import { erasureWorkflowId } from '@elma/workflows';
import { workerSuite } from '../../../tests/support/elma-process';
import { verifyCertificateCommand } from './commands/verify-certificate';

/** Events in the erased closure: enough that the purge takes long enough to be killed inside it. */
const CLOSURE_EVENTS = 2_000;

/**
 * A worker killed (SIGKILL) while it purges the index: Temporal notices the
 * missing heartbeats within seconds and a second worker reruns the purge from
 * wherever the first one died. The erasure ends with a certificate that
 * verifies and no plaintext of the erased records left in the data folder.
 * The workers are real `elma worker` processes on real SQLite files.
 */
describe('an erasure whose worker dies inside purge_index', () => {
  const { dataDir, taskQueue, address, spawnWorker, withElma } = workerSuite('purge-kill', 90_000);
  const principal: Principal = { tenant: 'acme', sub: 'dpo-1', roles: ['dpo', 'agent'], purposes: ['support'], clearance: 'restricted' };
  const text = (i: number) => `Quillfeather ledger entry ${String(i).padStart(5, '0')} for the Brackenridge account`;
  let connection: Connection | undefined;

  afterAll(async () => {
    await connection?.close();
  });

  it('is finished by a second worker within seconds, with a valid certificate and a clean byte scan', async () => {
    const { requestId, jwks } = await withElma(async (elma) => {
      await elma.runner.start();
      let position = 0;
      for (let from = 0; from < CLOSURE_EVENTS; from += 500) {
        const events = Array.from({ length: 500 }, (_, k) => ({
          subject: 'cust-purge',
          occurredAt: '2026-11-20T10:00:00Z',
          activity: 'chat.turn',
          content: { text: text(from + k) },
          source: { system: 'crm', channel: 'chat', externalId: `purge-${from + k}` },
        }));
        position = Number((await elma.ingest.ingest(principal, { events })).position);
      }
      await elma.runner.waitFor(BigInt(position), 300_000);
      const { version, ...policy } = await elma.policies.get('acme');
      // No approval step: the workflow goes straight from the closure to the purge.
      await elma.policies.put('acme', { ...policy, erasure: { approvalThreshold: 1_000_000, approvalTimeoutHours: 1 } }, 'admin', version);
      const request = await elma.erasure.requests.request(
        { ...principal, sub: 'compliance-1', roles: ['compliance'] },
        { scope: { type: 'subject', subject: 'cust-purge' }, reason: 'subject_request' },
        'test',
      );
      return { requestId: request.requestId, jwks: elma.signer.jwks() };
    });
    connection = await Connection.connect({ address });
    const options = { connection, taskQueue };
    const handle = new Client({ connection }).workflow.getHandle(erasureWorkflowId('acme', requestId));

    const first = await spawnWorker();
    await startErasure(options, { tenant: 'acme', requestId, reason: 'subject_request' });
    // Kill only once the purge activity has started on the worker (not merely been scheduled).
    for (const deadline = Date.now() + 120_000; ;) {
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      const purge = pending.find((a) => a.activityType?.name === 'erasurePurgeIndex');
      // PendingActivityState 2 is STARTED.
      if (purge && Number(purge.state) === 2) break;
      if (Date.now() > deadline) throw new Error('the purge never started');
      await new Promise((r) => setTimeout(r, 20));
    }
    process.kill(-first.pid!, 'SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));

    const second = await spawnWorker();
    const secondStarted = performance.now();
    // Without heartbeats the lost attempt would only be retried after its 30-minute start-to-close timeout:
    // the purge would not be done for half an hour.
    let purgedAfterMs: number | undefined;
    for (const deadline = secondStarted + 90_000; purgedAfterMs === undefined;) {
      const steps = (await erasureProgress(options, 'acme', requestId))?.steps ?? [];
      if (steps.some((s) => s.step === 'purge_index')) purgedAfterMs = performance.now() - secondStarted;
      else if (performance.now() > deadline) throw new Error('the purge was not retried within 90 s of the second worker starting');
      else await new Promise((r) => setTimeout(r, 100));
    }
    const result = await erasureResult(options, 'acme', requestId);
    const finishedAfterMs = performance.now() - secondStarted;
    process.stderr.write(
      `[faults] purge_index killed: purge retried and done ${Math.round(purgedAfterMs)} ms, erasure certified ${Math.round(finishedAfterMs)} ms after the second worker started\n`,
    );
    expect(result.erased).toBeGreaterThanOrEqual(CLOSURE_EVENTS);
    // The heartbeat timeout (15 s) bounds the wait; the rest is the purge itself on a busy machine.
    expect(purgedAfterMs).toBeLessThan(30_000);
    expect(finishedAfterMs).toBeLessThan(90_000);

    const progress = (await erasureProgress(options, 'acme', requestId))!;
    expect(progress.status).toBe('completed');
    // The purge ran twice: the first attempt died with its worker.
    expect(progress.steps.find((s) => s.step === 'purge_index')!.attempts).toBeGreaterThanOrEqual(2);

    // The data folder as the certificate describes it, while the second worker still holds it open.
    const files = await listFiles([dataDir], { exclude: (path) => path.endsWith('temporal.db') });
    const scan = await scanFiles(
      files,
      [0, 1, 999, CLOSURE_EVENTS - 1].map((i) => ({ id: String(i), bytes: Buffer.from(text(i)) })),
    );
    expect(scan.files).toBeGreaterThan(0);
    expect(scan.findings).toEqual([]);

    const stored = await new Promise<void>((resolve) => {
      second.once('exit', () => resolve());
      process.kill(-second.pid!, 'SIGTERM');
    }).then(() => withElma((elma) => elma.erasure.store.certificate('acme', requestId)));
    expect(stored?.signature.value).toBe(result.signature);
    const certificateFile = join(dataDir, 'certificate.json');
    const jwksFile = join(dataDir, 'jwks.json');
    writeFileSync(certificateFile, JSON.stringify(stored));
    writeFileSync(jwksFile, JSON.stringify(jwks));
    let out = '';
    const exit = await verifyCertificateCommand([certificateFile, '--jwks', jwksFile], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (out += s) },
    });
    expect(out).toContain('certificate OK');
    expect(exit).toBe(0);
  }, 400_000);
});
