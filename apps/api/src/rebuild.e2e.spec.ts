import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { aliasName } from '../../../infra/src/memory-index/elasticsearch/mapping';
import { elmaArgs } from '../../../tests/support/elma-process';
import { callApi, chatEvent, e2eIndex, startTestApp, type TestApp } from './testing';

/**
 * `elma rebuild --tenant T` as an operator runs it: the CLI in its own
 * process starts the ReindexWorkflow on the run's Temporal server; the
 * running ELMA's worker executes it, on the engine of the run. On
 * Elasticsearch the views are built in a new index beside the live one and
 * the alias moved to it, the old index deleted; on the embedded index they
 * are dropped and replayed in place. Either way, recall answers in English
 * and Chinese as before, and writes after the rebuild land in the new views.
 */
let t: TestApp;
let token: string;

/** The `elma rebuild` CLI against this app's task queue; the worker runs in this process, so the CLI must not block it. */
function rebuild(tenant: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env, ELMA_DATA_DIR: t.dataDir, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TASK_QUEUE: t.taskQueue! };
  const child = spawn(process.execPath, elmaArgs('rebuild', '--tenant', tenant), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  return new Promise((resolve) =>
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    }),
  );
}

/** The concrete indices behind an alias of the test node. */
async function indicesOf(alias: string): Promise<string[]> {
  const response = await fetch(`${process.env.ELMA_E2E_ELASTICSEARCH_URL}/_alias/${alias}`);
  expect(response.status).toBe(200);
  return Object.keys((await response.json()) as Record<string, unknown>).sort();
}

async function exists(index: string): Promise<boolean> {
  return (await fetch(`${process.env.ELMA_E2E_ELASTICSEARCH_URL}/${index}`, { method: 'HEAD' })).status === 200;
}

async function recalled(query: string): Promise<{ id: string; text: string }[]> {
  const response = await callApi(t.url, token, 'POST', '/v1/recall', {
    query,
    purpose: 'support',
    consistency: 'strong',
    budgetTokens: 2000,
  });
  expect(response.status, response.text).toBe(200);
  return response.body.items.map((item: { id: string; text: string }) => ({ id: item.id, text: item.text }));
}

async function ingest(events: unknown[]): Promise<void> {
  const response = await callApi(t.url, token, 'POST', '/v1/events', { events });
  expect(response.status, response.text).toBe(202);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
}

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  token = await t.token();
}, 120_000);
afterAll(async () => t?.close());

describe(`elma rebuild, with the index on ${e2eIndex === 'elasticsearch' ? 'Elasticsearch (alias swap)' : 'the embedded index (drop and replay in place)'}`, () => {
  it('rebuilds the tenant from its log through Temporal; recall answers in English and Chinese as before', async () => {
    await ingest([
      chatEvent('cust-1', '客户王先生说交付风险很高，希望下周确认发货日期。', { source: { system: 'crm', externalId: 'zh-1' } }),
      chatEvent('cust-2', 'The customer said the harbour crane is out of service until Friday.', {
        source: { system: 'crm', externalId: 'en-1' },
      }),
      chatEvent('cust-2', 'Invoices go to the Ningbo office from March.', { source: { system: 'crm', externalId: 'en-2' } }),
    ]);
    const zhBefore = await recalled('交付风险');
    const enBefore = await recalled('harbour crane out of service');
    expect(zhBefore.map((i) => i.text)).toContain('客户王先生说交付风险很高，希望下周确认发货日期。');
    expect(enBefore.map((i) => i.text)).toContain('The customer said the harbour crane is out of service until Friday.');
    const count = await t.elma.index.count('acme');
    expect(count).toBe(3);

    const alias = e2eIndex === 'elasticsearch' ? aliasName('acme', t.elma.config.elasticsearch!.namespace) : '';
    const live = e2eIndex === 'elasticsearch' ? await indicesOf(alias) : [];
    if (e2eIndex === 'elasticsearch') expect(live).toHaveLength(1);

    const run = await rebuild('acme');
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ tenant: 'acme', dropped: count, memories: count });
    expect(result.replayedEvents).toBeGreaterThanOrEqual(3);
    // Progress went to stderr as plain lines (not a terminal), ending with the outcome; stdout held only the JSON.
    expect(run.stderr).toMatch(/^rebuild acme: done · \d+s$/m);
    expect(run.stderr).not.toContain('\r');

    if (e2eIndex === 'elasticsearch') {
      // A new concrete index behind the alias, the old one gone.
      expect(result.swap.from).toBe(live[0]);
      expect(result.swap.to).not.toBe(live[0]);
      expect(await indicesOf(alias)).toEqual([result.swap.to]);
      expect(await exists(live[0])).toBe(false);
      expect(await exists(result.swap.to)).toBe(true);
    } else {
      expect(result.swap).toBeUndefined();
    }

    expect(await recalled('交付风险')).toEqual(zhBefore);
    expect(await recalled('harbour crane out of service')).toEqual(enBefore);
    expect(await t.elma.index.count('acme')).toBe(count);
  }, 120_000);

  it('writes after the rebuild land in the rebuilt views, in both languages', async () => {
    await ingest([
      chatEvent('cust-3', '仓库昨夜被淹，货物全部损失。', { source: { system: 'crm', externalId: 'zh-2' } }),
      chatEvent('cust-3', 'The depot in Suzhou flooded last night and all goods were lost.', {
        source: { system: 'crm', externalId: 'en-3' },
      }),
    ]);
    expect((await recalled('仓库 被淹')).map((i) => i.text)).toContain('仓库昨夜被淹，货物全部损失。');
    expect((await recalled('depot flooded goods lost')).map((i) => i.text)).toContain(
      'The depot in Suzhou flooded last night and all goods were lost.',
    );
    expect(await t.elma.index.count('acme')).toBe(5);
  });
});
