import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { MemoryRecord, Principal } from '@elma/domain';
import { callApi, chatEvent, startTestApp, type TestApp } from './testing';

/** ConsolidationWorkflow (docs/architecture.md#consolidation) on a real Temporal server, triggered the ways the product triggers it. */
let t: TestApp;
let connection: Connection;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);

async function ingest(events: unknown[]) {
  const response = await call('agent', 'POST', '/v1/events', { events });
  expect(response.status, response.text).toBe(202);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
  return response.body.events as { id: string }[];
}

/** The subject's consolidated views, once at least `atLeast` are indexed. */
async function views(subject: string, atLeast: number): Promise<MemoryRecord[]> {
  for (let i = 0; i < 300; i++) {
    await t.elma.runner.waitFor(await t.elma.log.headPosition());
    const found: MemoryRecord[] = [];
    for await (const entry of t.elma.index.lineage('acme')) {
      if (entry.subject === subject && entry.rule.startsWith('consolidate.'))
        found.push((await t.elma.index.get('acme', entry.id))!.record);
    }
    if (found.length >= atLeast) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`fewer than ${atLeast} views for ${subject}`);
}

beforeAll(async () => {
  t = await startTestApp({ temporal: { consolidateEveryEvents: 5 } });
  connection = await Connection.connect({ address: inject('temporalAddress') });
  const mint = (sub: string, claims: Partial<Principal>) => t.token({ sub, ...claims });
  tokens.agent = await mint('agent-1', { roles: ['agent'], purposes: ['support'], clearance: 'confidential' });
  tokens.compliance = await mint('comp-1', { roles: ['compliance'], purposes: ['support'], clearance: 'restricted' });
}, 120_000);
afterAll(async () => {
  await connection?.close();
  await t?.close();
});

describe('consolidation', () => {
  let inputs: { id: string }[];
  let derived: MemoryRecord[];

  it('runs after N new events of a subject: facts, a merge of near-duplicates and a session summary, each with lineage', async () => {
    const at = (minute: number) => `2026-11-20T10:0${minute}:00Z`; // a Friday
    inputs = await ingest([
      chatEvent('cust-c1', 'I prefer email over phone calls.', { occurredAt: at(0) }),
      chatEvent('cust-c1', 'I will send the signed contract by Monday.', { occurredAt: at(1) }),
      chatEvent('cust-c1', '我是华东区的销售经理，负责大客户。', { occurredAt: at(2) }),
      chatEvent('cust-c1', 'The shipment to Shanghai is delayed by two weeks.', { occurredAt: at(3) }),
      chatEvent('cust-c1', 'The shipment to Shanghai is delayed by two weeks!', {
        occurredAt: at(4),
        source: { system: 'web-form', channel: 'web' },
      }),
    ]);
    derived = await views('cust-c1', 5);
    const facts = derived.filter((r) => r.kind === 'semantic').map((r) => [r.content.fact!.attribute, r.content.fact!.value]);
    expect(facts).toEqual(
      expect.arrayContaining([
        ['preference', 'email over phone calls'],
        ['commitment', 'send the signed contract by Monday (due 2026-11-23)'],
        ['role', '华东区的销售经理'],
      ]),
    );
    const merge = derived.find((r) => r.provenance.rule === 'consolidate.merge')!;
    expect(merge.provenance.parentIds).toEqual([`mem_ep_${inputs[3].id}`, `mem_ep_${inputs[4].id}`].sort());
    // Taint is inherited: one of the merged memories came from the web.
    expect(merge.tainted).toBe(true);
    const summary = derived.find((r) => r.provenance.rule === 'consolidate.summary')!;
    expect(summary.content.text).toMatch(/^Session summary \(2026-11-20\): /);
    expect(summary.provenance.parentIds.length).toBeGreaterThanOrEqual(3);
    for (const view of derived) {
      const parents = await Promise.all(view.provenance.parentIds.map(async (id) => (await t.elma.index.get('acme', id))!.record));
      expect(view.confidence).toBeLessThanOrEqual(Math.min(...parents.map((p) => p.confidence)));
      expect(view.provenance.sourceEventIds.length).toBeGreaterThan(0);
    }
  });

  it('is idempotent: running it again creates nothing new', async () => {
    const client = new Client({ connection });
    const again = await client.workflow.execute('consolidationWorkflow', {
      taskQueue: t.taskQueue!,
      workflowId: `consolidate-again-${Date.now()}`,
      args: [{ tenant: 'acme', subjectRefs: [`mem_ep_${inputs[0].id}`] }],
    });
    expect(again).toMatchObject({ subjects: 1, created: 0 });
    expect((again as { unchanged: number }).unchanged).toBe(derived.length);
  });

  it('never re-derives what was erased', async () => {
    const preference = derived.find((r) => r.content.fact?.attribute === 'preference')!;
    const erasure = await call('compliance', 'POST', '/v1/erasures', {
      scope: { type: 'records', recordIds: [preference.id] },
      reason: 'correction',
    });
    expect(erasure.status, erasure.text).toBe(202);
    for (let i = 0; i < 300; i++) {
      const progress = await call('compliance', 'GET', `/v1/erasures/${erasure.body.requestId}`);
      if (progress.body.status === 'completed') break;
      expect(['running', 'awaiting_approval']).toContain(progress.body.status);
      await new Promise((r) => setTimeout(r, 100));
    }
    const client = new Client({ connection });
    const rerun = await client.workflow.execute('consolidationWorkflow', {
      taskQueue: t.taskQueue!,
      workflowId: `consolidate-after-erasure-${Date.now()}`,
      args: [{ tenant: 'acme', subjectRefs: [`mem_ep_${inputs[0].id}`] }],
    });
    expect((rerun as { skippedErased: number }).skippedErased).toBeGreaterThanOrEqual(1);
    expect(await t.elma.index.get('acme', preference.id)).toBeUndefined();
  });

  it('runs at once on a session.end event', async () => {
    await ingest([
      chatEvent('cust-c2', 'Customer asked for the invoice copy.', { occurredAt: '2026-11-21T09:00:00Z' }),
      chatEvent('cust-c2', 'Customs needs the commercial invoice.', { occurredAt: '2026-11-21T09:01:00Z' }),
      chatEvent('cust-c2', 'Agent promised a callback tomorrow.', { occurredAt: '2026-11-21T09:02:00Z', activity: 'session.end' }),
    ]);
    const summary = (await views('cust-c2', 1)).find((r) => r.provenance.rule === 'consolidate.summary');
    expect(summary?.provenance.parentIds).toHaveLength(3);
  });

  it('merges facts that state the same value about the same entity and attribute', async () => {
    const fact = { entity: 'ACME', attribute: 'headquarters', value: 'Berlin' };
    const [a, b] = await ingest([
      chatEvent('cust-c3', 'ACME is based in Berlin', {
        occurredAt: '2026-11-22T09:00:00Z',
        content: { text: 'ACME is based in Berlin', fact },
      }),
      chatEvent('cust-c3', 'Their head office is in Berlin', {
        occurredAt: '2026-11-22T09:01:00Z',
        content: { text: 'Their head office is in Berlin', fact: { ...fact, value: ' berlin ' } },
      }),
      chatEvent('cust-c3', 'Bye.', { occurredAt: '2026-11-22T09:02:00Z', activity: 'session.end' }),
    ]);
    const merged = (await views('cust-c3', 1)).find((r) => r.provenance.rule === 'consolidate.merge' && r.kind === 'semantic');
    expect(merged?.provenance.parentIds).toEqual([`mem_se_${a.id}`, `mem_se_${b.id}`].sort());
  });
});
