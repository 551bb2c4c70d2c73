import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { DEFAULT_POLICY, MAX_BATCH, episodicIdFor, type IndexFilter, type Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { MAX_DEPTH, parseSessionDateTime, scoreRetrieval, summarise, type ScoredQuestion, type SummaryRow } from '../eval/locomo-metrics';

const TENANT = 'locomo';
const PURPOSE = 'eval';
const ROUTES = ['bm25', 'dense', 'hybrid'] as const;
type Route = (typeof ROUTES)[number];
/** Categories 1-4; 5 (adversarial) has no answer in the conversation, so no evidence to retrieve. */
const CATEGORIES: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop' };
const EMBED_BATCH = 256;

const principal: Principal = { tenant: TENANT, sub: 'eval-locomo', roles: ['agent'], purposes: [PURPOSE], clearance: 'restricted' };

const Turn = z.object({
  sample_id: z.string().min(1),
  /** The conversation session the turn belongs to (1, 2, ...): becomes the event's `session`. */
  session: z.number().int().optional(),
  session_datetime: z.string(),
  dia_id: z.string().min(1),
  speaker: z.string(),
  text: z.string(),
  blip_caption: z.string().nullish(),
});
type Turn = z.infer<typeof Turn>;

const Question = z.object({
  sample_id: z.string().min(1),
  qa_index: z.number().int(),
  question: z.string().min(1),
  category: z.number().int(),
  evidence: z.array(z.string()),
});
type Question = z.infer<typeof Question>;

/** Memory ids of a sample's turns: sample_id -> dia_id -> memory id (dia_ids repeat across samples). */
type MemoryIds = Map<string, Map<string, string>>;

/**
 * `npm run eval:locomo`: how well the index finds the turns that answer
 * LoCoMo's questions (evidence recall@5/10/20 and MRR, per category), by BM25
 * alone, by the dense route alone and by both fused with RRF. Everything runs
 * through the real ingest, projection and index on SQLite files in a
 * temporary folder; the data stays outside the repository (CC BY-NC 4.0).
 */
export async function evalLocomoCommand(argv: string[]): Promise<number> {
  const started = performance.now();
  const { values } = parseArgs({
    args: argv,
    options: { data: { type: 'string' }, samples: { type: 'string' }, json: { type: 'string' } },
  });
  const dataDir = resolve(process.cwd(), values.data ?? process.env.ELMA_LOCOMO_DIR ?? '../shared/data/locomo-dev');
  const files = { turns: join(dataDir, 'turns.jsonl'), qa: join(dataDir, 'qa.jsonl') };
  const missing = [dataDir, files.turns, files.qa].find((path) => !existsSync(path));
  if (missing) {
    process.stderr.write(
      `LoCoMo data not found: ${missing}\n(the folder needs turns.jsonl and qa.jsonl; give it with --data <dir> or ELMA_LOCOMO_DIR)\n`,
    );
    return 2;
  }
  const sampleLimit = values.samples === undefined ? Infinity : Number(values.samples);
  if (!(Number.isInteger(sampleLimit) && sampleLimit > 0) && sampleLimit !== Infinity) {
    process.stderr.write(`--samples needs a positive integer, got "${values.samples}"\n`);
    return 2;
  }

  const allTurns = readJsonl(files.turns, Turn);
  const samples = [...new Set(allTurns.map((t) => t.sample_id))].slice(0, sampleLimit);
  const turns = allTurns.filter((t) => samples.includes(t.sample_id));
  const questions = readJsonl(files.qa, Question).filter((q) => samples.includes(q.sample_id));

  const workDir = mkdtempSync(join(tmpdir(), 'elma-locomo-'));
  const elma = await openElma(loadConfig({ ELMA_DATA_DIR: workDir, ...embedderSettings() }), { logger: silentLogger });
  const seconds = { ingest: 0, projection: 0, queries: 0, wall: 0 };
  let rows: SummaryRow[];
  let memories: number;
  let asked: Awaited<ReturnType<typeof askQuestions>>;
  try {
    process.stderr.write(
      `[eval:locomo] ${dataDir}: ${samples.length} samples, ${turns.length} turns, ${questions.length} questions; data in ${workDir}\n`,
    );
    // A turn that looks like a secret is stored redacted rather than failing its whole batch.
    const { version: _version, ...policy } = DEFAULT_POLICY;
    await elma.policies.put(TENANT, { ...policy, secrets: { mode: 'redact' } }, 'eval-locomo');

    let start = performance.now();
    const ids = await ingestTurns(elma, turns);
    seconds.ingest = (performance.now() - start) / 1000;

    start = performance.now();
    await elma.runner.start();
    await elma.runner.waitFor(await elma.log.headPosition(), 10 * 60_000);
    // Vectors are made in the background: the dense route is measured once every turn has its vector.
    await elma.embeddings.waitForEmbedded(TENANT, 60 * 60_000);
    seconds.projection = (performance.now() - start) / 1000;
    memories = await elma.index.count(TENANT);

    start = performance.now();
    asked = await askQuestions(elma, questions, ids);
    seconds.queries = (performance.now() - start) / 1000;
    rows = summarise(asked.scored);
  } finally {
    await elma.close();
    rmSync(workDir, { recursive: true, force: true });
  }
  seconds.wall = (performance.now() - started) / 1000;

  const run: EvalRun = { dataDir, samples, embedder: elma.embedder.model, turns: turns.length, memories, asked, seconds, rows };
  process.stdout.write(summaryText(run));
  if (values.json) writeFileSync(resolve(process.cwd(), values.json), `${JSON.stringify(jsonReport(run), null, 2)}\n`);
  return 0;
}

/** What one evaluation found, for the summary and the JSON report. */
interface EvalRun {
  dataDir: string;
  samples: string[];
  embedder: string;
  turns: number;
  memories: number;
  asked: Awaited<ReturnType<typeof askQuestions>>;
  seconds: { ingest: number; projection: number; queries: number; wall: number };
  rows: SummaryRow[];
}

function summaryText({ samples, embedder, turns, memories, asked, seconds, rows }: EvalRun): string {
  const searches = asked.evaluated * ROUTES.length;
  return (
    [
      `LoCoMo retrieval, ${samples.length} samples (${samples.join(', ')}), embedder ${embedder}`,
      `ingested ${turns} turns -> ${memories} memories; ingest ${seconds.ingest.toFixed(1)} s, projection ${seconds.projection.toFixed(1)} s`,
      `questions: ${asked.evaluated} evaluated (categories 1-4), ${asked.adversarial} adversarial left out, ${asked.skipped} skipped (no evidence or unknown dia_ids)`,
      `${searches} searches in ${seconds.queries.toFixed(1)} s (${((seconds.queries * 1000) / Math.max(1, searches)).toFixed(2)} ms each); wall time ${seconds.wall.toFixed(1)} s`,
      '',
      renderTable(rows),
    ].join('\n') + '\n'
  );
}

function jsonReport({ dataDir, samples, embedder, turns, memories, asked, seconds, rows }: EvalRun) {
  return {
    data: dataDir,
    samples,
    embedder,
    turns,
    memories,
    questions: { evaluated: asked.evaluated, adversarial: asked.adversarial, skipped: asked.skipped },
    seconds,
    rows: rows.map((r) => ({ ...r, categoryName: r.category === 'all' ? 'all' : CATEGORIES[r.category] })),
  };
}

/** The embedder settings of the environment, so a real model can be evaluated; everything else stays at its default. */
function embedderSettings(): Record<string, string | undefined> {
  const names = ['ELMA_EMBEDDER', 'ELMA_EMBEDDING_DIMENSIONS', 'ELMA_EMBEDDING_URL', 'ELMA_EMBEDDING_MODEL', 'ELMA_EMBEDDING_API_KEY'];
  return Object.fromEntries(names.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]]));
}

function readJsonl<T>(path: string, schema: z.ZodType<T>): T[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const parsed = schema.safeParse(JSON.parse(line));
      if (!parsed.success)
        throw new Error(`${path}:${i + 1}: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`);
      return parsed.data;
    });
}

/** Each sample's turns become one subject's events, in batches of at most MAX_BATCH. */
async function ingestTurns(elma: Elma, turns: readonly Turn[]): Promise<MemoryIds> {
  const ids: MemoryIds = new Map();
  for (let done = 0; done < turns.length; done += MAX_BATCH) {
    const batch = turns.slice(done, done + MAX_BATCH);
    const events = batch.map((turn) => ({
      subject: turn.sample_id,
      occurredAt: parseSessionDateTime(turn.session_datetime),
      activity: 'dialog.turn',
      content: { text: `${turn.speaker}: ${turn.text}${turn.blip_caption ? ` [image: ${turn.blip_caption}]` : ''}` },
      source: { system: 'locomo', externalId: turn.dia_id, channel: 'chat' },
      purposes: [PURPOSE],
      // Neighbour smoothing looks at the turns around a hit within its session.
      ...(turn.session !== undefined ? { session: `${turn.sample_id}/s${turn.session}` } : {}),
      // dia_ids repeat across samples: the key names both, so two samples' identical turns stay two events.
      idempotencyKey: `${turn.sample_id}/${turn.dia_id}`,
    }));
    const result = await elma.ingest.ingest(principal, { events });
    // The result lists the events in request order.
    result.events.forEach((ref, i) => {
      const turn = batch[i];
      const bySample = ids.get(turn.sample_id) ?? new Map<string, string>();
      bySample.set(turn.dia_id, episodicIdFor(ref.id));
      ids.set(turn.sample_id, bySample);
    });
  }
  return ids;
}

/** Runs every answerable question of categories 1-4 through each route, restricted to its own sample. */
async function askQuestions(elma: Elma, questions: readonly Question[], ids: MemoryIds) {
  const answerable: { question: Question; evidence: string[] }[] = [];
  let adversarial = 0;
  let skipped = 0;
  for (const question of questions) {
    if (!(question.category in CATEGORIES)) {
      adversarial++;
      continue;
    }
    const known = ids.get(question.sample_id);
    const evidence = question.evidence.map((dia) => known?.get(dia));
    if (evidence.length === 0 || evidence.some((id) => id === undefined)) {
      skipped++;
      continue;
    }
    answerable.push({ question, evidence: evidence as string[] });
  }

  const vectors: Float32Array[] = [];
  for (let i = 0; i < answerable.length; i += EMBED_BATCH) {
    vectors.push(
      ...(await elma.embedder.embed(
        answerable.slice(i, i + EMBED_BATCH).map((a) => a.question.question),
        'query',
      )),
    );
  }
  const now = new Date().toISOString();
  const scored: ScoredQuestion[] = [];
  for (const [i, { question, evidence }] of answerable.entries()) {
    // The owner of an episodic memory is its subject: one clause keeps the search inside this sample.
    const filter: IndexFilter = {
      kinds: ['episodic'],
      statuses: ['active', 'disputed'],
      maxSensitivity: 'restricted',
      now,
      clauses: [{ ruleId: 'eval', maxSensitivity: 'restricted', owner: question.sample_id }],
    };
    for (const route of ROUTES) {
      const hits = await elma.index.search({
        tenant: TENANT,
        ...routeQuery(route, question.question, vectors[i]),
        limit: MAX_DEPTH,
        filter,
      });
      if (hits.some((hit) => hit.record.subject !== question.sample_id))
        throw new Error(`a search for ${question.sample_id} returned another sample's memory`);
      scored.push({
        category: question.category,
        route,
        score: scoreRetrieval(
          hits.map((hit) => hit.record.id),
          evidence,
        ),
      });
    }
  }
  return { scored, evaluated: answerable.length, adversarial, skipped };
}

/** An empty text turns BM25 off; no vector turns the dense route off. */
function routeQuery(route: Route, text: string, vector: Float32Array): { text: string; vector?: Float32Array } {
  switch (route) {
    case 'bm25':
      return { text };
    case 'dense':
      return { text: '', vector };
    case 'hybrid':
      return { text, vector };
    default: {
      const _exhaustive: never = route;
      return _exhaustive;
    }
  }
}

function renderTable(rows: readonly SummaryRow[]): string {
  const header = ['category', 'route', 'n', 'R@5', 'R@10', 'R@20', 'MRR'];
  const cells = rows.map((r) => [
    r.category === 'all' ? 'all (1-4)' : `${r.category} ${CATEGORIES[r.category]}`,
    r.route,
    String(r.n),
    ...[r.recall5, r.recall10, r.recall20, r.mrr].map((x) => x.toFixed(3)),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  // Text columns left-aligned, figures right-aligned.
  const render = (row: string[]) => row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [render(header), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(render)].join('\n');
}
