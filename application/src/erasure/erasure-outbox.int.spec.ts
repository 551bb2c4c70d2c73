import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import type { ErasureStart } from './erasure-outbox';

const dpo: Principal = { tenant: 'acme', sub: 'dpo-1', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' };
const body = { scope: { type: 'subject', subject: 'cust-1' }, reason: 'subject_request' };

describe('the erasure outbox', () => {
  let dir: string;
  let elma: Elma;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'elma-outbox-'));
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir }), { logger: silentLogger });
  });
  afterEach(async () => {
    await elma.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a stored request whose start failed is started by a later drain, and only once', async () => {
    const { requestId } = await elma.erasure.requests.request(dpo, body, 'req-1');
    const unreachable = await elma.erasure.requests.startPending(async () => {
      throw new Error('Temporal is down');
    });
    expect(unreachable).toEqual({ started: 0, pending: 1 });

    const started: ErasureStart[] = [];
    expect(await elma.erasure.requests.startPending(async (entry) => void started.push(entry))).toEqual({ started: 1, pending: 0 });
    expect(started).toEqual([{ tenant: 'acme', requestId, reason: 'subject_request' }]);
    expect(await elma.erasure.requests.startPending(async (entry) => void started.push(entry))).toEqual({ started: 0, pending: 0 });
    expect(started).toHaveLength(1);
  });

  it('a request whose workflow was started leaves nothing to drain', async () => {
    const { requestId } = await elma.erasure.requests.request(dpo, body, 'req-1');
    await elma.erasure.requests.workflowStarted('acme', requestId);
    const started: ErasureStart[] = [];
    expect(await elma.erasure.requests.startPending(async (entry) => void started.push(entry))).toEqual({ started: 0, pending: 0 });
    expect(started).toEqual([]);
  });
});
