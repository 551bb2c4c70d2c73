import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { episodicIdFor, type Principal, type RecallResult } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Ablations, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { embedderEnv } from '../../bench/embedder-env';
import { waitForEmbeddings } from '../locomo-search';
import { openEvalEmbedder } from '../paper/embedder';
import type { Split, Tenant } from './data';
import { rankOf, rankedIds, summarise, type Answer, type Row } from './metrics';

/** The three ways of recalling measured: the complete recall, and each route alone (the evaluation's ablations). */
export const VARIANTS: readonly { name: string; label: string; ablations: Ablations }[] = [
  { name: 'shipped', label: 'recall as shipped', ablations: {} },
  { name: 'dense', label: 'dense route alone', ablations: { recall: { routes: 'dense' } } },
  { name: 'bm25', label: 'BM25 alone', ablations: { recall: { routes: 'bm25' } } },
];

const PURPOSE = 'support';
/** Enough for every one of recall's 30 candidates: what is ranked is what recall found, not what a small budget kept. */
const BUDGET_TOKENS = 8000;
const CATCH_UP_MS = 10 * 60_000;
/** Questions embedded per call of the model when the memo is filled ahead of the recalls. */
const QUERY_BATCH = 64;

const agentOf = (tenant: string): Principal => ({
  tenant,
  sub: 'agent-eval',
  roles: ['agent'],
  purposes: [PURPOSE],
  clearance: 'confidential',
});

/** A part of the test set: its tenants, reported under its split's name. */
export interface Part {
  split: Split;
  tenants: readonly Tenant[];
}

export interface BilingualRun {
  splits: Split[];
  embedder: string;
  semantic: boolean;
  tenants: number;
  memories: number;
  questions: number;
  answers: Answer[];
  rows: Row[];
  /** The first three memory ids (the test set's) a variant gave for each question it did not rank first. */
  misses: { question: string; variant: string; top3: string[] }[];
  seconds: { model: number; queryVectors: number; ingest: number; projection: number; queries: number; wall: number };
}

/**
 * Runs the test set's parts through ELMA as an agent uses it: each tenant's memories written as events (the
 * episodic memory of each is what a question expects), then every question asked of the real recall use case
 * (`RecallService` through `openElma`, SQLite and the embedded vector index) once per variant. Each variant has a
 * data folder of its own under `workDir`; one memoised embedder serves all three, so every text is embedded once.
 * `env` names the embedder as `elma start` reads it (ELMA_EMBEDDER, ELMA_EMBEDDING_*; the model by default).
 */
export async function runBilingual(options: {
  /** The parts to ask, each reported on its own (`loadSplit`). */
  parts: readonly Part[];
  workDir: string;
  env?: NodeJS.ProcessEnv;
  progress?: (line: string) => void;
}): Promise<BilingualRun> {
  const started = performance.now();
  const progress = options.progress ?? (() => undefined);
  const env = embedderEnv(options.env ?? process.env);
  const { parts } = options;
  const tenants = parts.flatMap((p) => p.tenants);
  const seconds = { model: 0, queryVectors: 0, ingest: 0, projection: 0, queries: 0, wall: 0 };

  let start = performance.now();
  const host = await openEvalEmbedder(env);
  seconds.model = (performance.now() - start) / 1000;
  // The questions' vectors in a few batched calls, into the memo that recall's own query embedding then reads:
  // the time of a recall is not what is measured here, and one call per question would dominate the run.
  start = performance.now();
  const queries = tenants.flatMap((t) => t.questions.map((q) => q.query));
  if (host.embedder.semantic)
    for (let i = 0; i < queries.length; i += QUERY_BATCH) await host.embedder.embed(queries.slice(i, i + QUERY_BATCH), 'query');
  seconds.queryVectors = (performance.now() - start) / 1000;
  const answers: Answer[] = [];
  const misses: BilingualRun['misses'] = [];
  try {
    for (const variant of VARIANTS) {
      const dir = join(options.workDir, variant.name);
      mkdirSync(dir, { recursive: true });
      const config = loadConfig({ ELMA_DATA_DIR: dir, ...env });
      const elma = await openElma(config, { logger: silentLogger, embedder: host.embedder, ablations: variant.ablations });
      try {
        start = performance.now();
        const ids = new Map<string, string>();
        for (const tenant of tenants) for (const [memory, id] of await remember(elma, tenant)) ids.set(id, memory);
        seconds.ingest += (performance.now() - start) / 1000;

        start = performance.now();
        await elma.runner.start();
        await elma.runner.waitFor(await elma.log.headPosition(), CATCH_UP_MS);
        for (const tenant of tenants) await waitForEmbeddings(elma, tenant.id, CATCH_UP_MS);
        seconds.projection += (performance.now() - start) / 1000;

        start = performance.now();
        for (const { split, tenants: ofSplit } of parts)
          for (const tenant of ofSplit)
            for (const question of tenant.questions) {
              const result: RecallResult = await elma.recall.recall(agentOf(tenant.id), {
                query: question.query,
                purpose: PURPOSE,
                budgetTokens: BUDGET_TOKENS,
              });
              // Back to the test set's ids; anything else (none is expected: no consolidation runs) keeps ELMA's id.
              const ranked = rankedIds(result.items).map((id) => ids.get(id) ?? id);
              const rank = rankOf(ranked, question.expected);
              answers.push({ split, tenant: tenant.id, question: question.id, direction: question.direction, variant: variant.name, rank });
              if (rank !== 1) misses.push({ question: question.id, variant: variant.name, top3: ranked.slice(0, 3) });
            }
        seconds.queries += (performance.now() - start) / 1000;
        progress(`[eval:bilingual] ${variant.label}: ${answers.filter((a) => a.variant === variant.name).length} questions asked`);
      } finally {
        await elma.close();
      }
    }
  } finally {
    await host.close();
  }
  seconds.wall = (performance.now() - started) / 1000;
  return {
    splits: parts.map((p) => p.split),
    embedder: host.embedder.model,
    semantic: host.embedder.semantic,
    tenants: tenants.length,
    memories: tenants.reduce((sum, t) => sum + t.memories.length, 0),
    questions: tenants.reduce((sum, t) => sum + t.questions.length, 0),
    answers,
    rows: summarise(answers),
    misses,
    seconds,
  };
}

/**
 * A tenant's memories as an agent writes them (`POST /v1/events`, one batch): one event per memory, in the tenant's
 * name. Returns the test set's memory id of each episodic memory id.
 */
async function remember(elma: Elma, tenant: Tenant): Promise<Map<string, string>> {
  const result = await elma.ingest.ingest(agentOf(tenant.id), {
    events: tenant.memories.map((memory) => ({
      subject: memory.subject,
      occurredAt: memory.occurredAt,
      activity: 'agent.note',
      content: { text: memory.text },
      source: { system: 'agent', externalId: memory.id },
      purposes: [PURPOSE],
    })),
  });
  // The result lists the events in request order.
  return new Map(result.events.map((ref, i) => [tenant.memories[i].id, episodicIdFor(ref.id)]));
}
