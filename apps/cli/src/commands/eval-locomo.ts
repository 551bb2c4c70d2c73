import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { DEFAULT_POLICY, MAX_BATCH, episodicIdFor, type IndexFilter, type MemoryIndex, type Principal } from '@elma/domain';
import { findRepoRoot, loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { embedderEnv } from '../bench/embedder-env';
import { DEFAULT_BOOTSTRAP, type BootstrapOptions } from '../eval/bootstrap';
import {
  MAX_DEPTH,
  gains,
  parseSessionDateTime,
  scoreRetrieval,
  summarise,
  type Gain,
  type ScoredQuestion,
  type SummaryRow,
} from '../eval/locomo-metrics';
import {
  FEATURES,
  SESSIONS,
  type Ranking,
  indexedMemories,
  searchVariant,
  variantDir,
  variantIndex,
  waitForEmbeddings,
} from '../eval/locomo-search';
import { ANALYSES, GAIN_PAIRS, VARIANTS, unavailable, type AnalysisName, type Feature, type Variant } from '../eval/locomo-variants';

/** The LoCoMo data's default folder, relative to the clone (the data stays outside the repository). */
export const LOCOMO_DEFAULT_DIR = '../shared/data/locomo-dev';

const TENANT = 'locomo';
const PURPOSE = 'eval';
/** Categories 1-4; 5 (adversarial) has no answer in the conversation, so no evidence to retrieve. */
const CATEGORIES: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop' };
const EMBED_BATCH = 256;

const principal: Principal = { tenant: TENANT, sub: 'eval-locomo', roles: ['agent'], purposes: [PURPOSE], clearance: 'restricted' };

const Turn = z.object({
  sample_id: z.string().min(1),
  /** The conversation session the turn belongs to (1, 2, ...), when the data says. */
  session: z.number().int().nullish(),
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

/** A variant that runs here, with the index it searches. */
interface Runnable {
  variant: Variant;
  index: MemoryIndex;
}

/**
 * `npm run eval:locomo`: how well ELMA finds the turns that answer LoCoMo's
 * questions (evidence recall@5/10/20 and MRR, per category, with bootstrap
 * intervals), for BM25 plain, BM25 with each improvement added in turn,
 * the dense route and the fused routes (see eval/locomo-variants.ts).
 * The turns go once through the real ingest, projection and index on SQLite
 * files in a temporary folder; the variants that analyse text differently
 * search extra indexes holding the same records and vectors, so the model
 * embeds each turn once. The data stays outside the repository (CC BY-NC 4.0).
 */
export async function evalLocomoCommand(argv: string[]): Promise<number> {
  const started = performance.now();
  const { values } = parseArgs({
    args: argv,
    options: {
      data: { type: 'string' },
      samples: { type: 'string' },
      json: { type: 'string' },
      resamples: { type: 'string', default: String(DEFAULT_BOOTSTRAP.resamples) },
      seed: { type: 'string', default: String(DEFAULT_BOOTSTRAP.seed) },
    },
  });
  const given = values.data ?? process.env.ELMA_LOCOMO_DIR;
  // Given: the typed folder's path, as every path of the command line; the default is beside the clone.
  const dataDir = given ? resolve(given) : resolve(findRepoRoot(), LOCOMO_DEFAULT_DIR);
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
  const bootstrap: BootstrapOptions = { ...DEFAULT_BOOTSTRAP, resamples: Number(values.resamples), seed: Number(values.seed) };
  if (!(Number.isInteger(bootstrap.resamples) && bootstrap.resamples > 0) || !Number.isInteger(bootstrap.seed)) {
    process.stderr.write(`--resamples needs a positive integer and --seed an integer\n`);
    return 2;
  }

  const allTurns = readJsonl(files.turns, Turn);
  const samples = [...new Set(allTurns.map((t) => t.sample_id))].slice(0, sampleLimit);
  const turns = allTurns.filter((t) => samples.includes(t.sample_id));
  const questions = readJsonl(files.qa, Question).filter((q) => samples.includes(q.sample_id));

  const workDir = mkdtempSync(join(tmpdir(), 'elma-locomo-'));
  const elma = await openElma(loadConfig({ ELMA_DATA_DIR: workDir, ...embedderEnv() }), { logger: silentLogger });
  const has: Record<Feature, boolean> = { ...FEATURES, semantic: elma.embedder.semantic };
  const seconds = { ingest: 0, projection: 0, embedding: 0, variants: 0, queries: 0, wall: 0 };
  const variantIndexes = new Map<AnalysisName, MemoryIndex>();
  let rows: SummaryRow[];
  let gained: Gain[];
  let memories: number;
  let asked: Awaited<ReturnType<typeof askQuestions>>;
  try {
    process.stderr.write(
      `[eval:locomo] ${dataDir}: ${samples.length} samples, ${turns.length} turns, ${questions.length} questions; embedder ${elma.embedder.model}; data in ${workDir}\n`,
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
    seconds.projection = (performance.now() - start) / 1000;
    start = performance.now();
    await waitForEmbeddings(elma, TENANT);
    seconds.embedding = (performance.now() - start) / 1000;
    memories = await elma.index.count(TENANT);

    // The same records and vectors in one index per text analysis the runnable variants need.
    start = performance.now();
    const copied = await indexedMemories(elma, TENANT);
    const runnable: Runnable[] = [];
    for (const variant of VARIANTS) {
      if (unavailable(variant, has)) continue;
      let index = variantIndexes.get(variant.analysis);
      if (!index) {
        index = await variantIndex(variantDir(workDir, variant.analysis), elma.embedder, ANALYSES[variant.analysis], copied, TENANT);
        variantIndexes.set(variant.analysis, index);
      }
      runnable.push({ variant, index });
    }
    seconds.variants = (performance.now() - start) / 1000;

    start = performance.now();
    asked = await askQuestions(elma, runnable, questions, ids);
    seconds.queries = (performance.now() - start) / 1000;
    rows = summarise(asked.scored, bootstrap);
    gained = gains(asked.scored, GAIN_PAIRS, bootstrap);
  } finally {
    for (const index of variantIndexes.values()) await index.close();
    await elma.close();
    rmSync(workDir, { recursive: true, force: true });
  }
  seconds.wall = (performance.now() - started) / 1000;

  const run: EvalRun = {
    dataDir,
    samples,
    embedder: elma.embedder.model,
    semantic: elma.embedder.semantic,
    ranking: elma.config.recall,
    has,
    bootstrap,
    turns: turns.length,
    memories,
    asked,
    seconds,
    rows,
    gains: gained,
  };
  process.stdout.write(summaryText(run));
  if (values.json) writeFileSync(resolve(process.cwd(), values.json), `${JSON.stringify(jsonReport(run), null, 2)}\n`);
  return 0;
}

/** What one evaluation found, for the summary and the JSON report. */
interface EvalRun {
  dataDir: string;
  samples: string[];
  embedder: string;
  semantic: boolean;
  ranking: Ranking;
  has: Record<Feature, boolean>;
  bootstrap: BootstrapOptions;
  turns: number;
  memories: number;
  asked: Awaited<ReturnType<typeof askQuestions>>;
  seconds: { ingest: number; projection: number; embedding: number; variants: number; queries: number; wall: number };
  rows: SummaryRow[];
  gains: Gain[];
}

function summaryText(run: EvalRun): string {
  const { samples, embedder, semantic, ranking, bootstrap, turns, memories, asked, seconds } = run;
  const { fusion } = ranking;
  const searches = asked.searches;
  const level = Math.round(bootstrap.level * 100);
  return (
    [
      `LoCoMo retrieval, ${samples.length} samples (${samples.join(', ')})`,
      `embedder ${embedder} (${semantic ? 'semantic' : 'not semantic: dense and fused rows are not run'})`,
      `ingested ${turns} turns -> ${memories} memories; ingest ${seconds.ingest.toFixed(1)} s, projection ${seconds.projection.toFixed(1)} s, ` +
        `waiting for embeddings ${seconds.embedding.toFixed(1)} s, variant indexes ${seconds.variants.toFixed(1)} s`,
      `ranking as configured: ${fusion.method} fusion, weights bm25 ${fusion.weights.bm25} / dense ${fusion.weights.dense}, ` +
        `dense floor ${fusion.denseFloor} (not applied to the dense row); smoothing factor ${ranking.smoothing}`,
      `turn sessions ${SESSIONS ? 'passed on each event' : 'not passed (the event has no session field here)'}`,
      `questions: ${asked.evaluated} evaluated (categories 1-4), ${asked.adversarial} adversarial left out, ${asked.skipped} skipped (no evidence or unknown dia_ids)`,
      `${searches} searches in ${seconds.queries.toFixed(1)} s (${((seconds.queries * 1000) / Math.max(1, searches)).toFixed(2)} ms each, ` +
        `query embedding ${asked.embedSeconds.toFixed(1)} s); wall time ${seconds.wall.toFixed(1)} s`,
      `R@10 ${level} % interval: percentile bootstrap, ${bootstrap.resamples} resamples of the row's questions, seed ${bootstrap.seed}`,
      '',
      renderTable(run),
      '',
      `R@10 gains over all questions (paired bootstrap, ${level} %):`,
      renderGains(run.gains),
      '',
      'variants:',
      ...VARIANTS.map((v) => `  ${v.name.padEnd(12)}  ${v.description}`),
    ].join('\n') + '\n'
  );
}

function jsonReport({
  dataDir,
  samples,
  embedder,
  semantic,
  ranking,
  has,
  bootstrap,
  turns,
  memories,
  asked,
  seconds,
  rows,
  gains,
}: EvalRun) {
  return {
    data: dataDir,
    samples,
    embedder,
    semantic,
    ranking,
    sessions: SESSIONS,
    bootstrap,
    turns,
    memories,
    questions: { evaluated: asked.evaluated, adversarial: asked.adversarial, skipped: asked.skipped },
    seconds: { ...seconds, queryEmbedding: asked.embedSeconds },
    variants: VARIANTS.map((v) => ({ ...v, unavailable: unavailable(v, has) ?? null })),
    rows: rows.map((r) => ({ ...r, categoryName: r.category === 'all' ? 'all' : CATEGORIES[r.category] })),
    gains,
  };
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

/**
 * When a turn was said: LoCoMo gives one time per session, so the n-th turn
 * of a session (dia_id `D<session>:<n>`) is placed n seconds after it. The
 * turns of a session then keep their order in time, which is what "the turn
 * before / after" (neighbour smoothing) reads; the calendar day, which date
 * words and temporal questions rely on, stays the session's.
 */
function turnTime(turn: Turn): string {
  const start = Date.parse(parseSessionDateTime(turn.session_datetime));
  const n = Number(/^D\d+:(\d+)$/.exec(turn.dia_id)?.[1] ?? 0);
  return new Date(start + n * 1000).toISOString();
}

/** Each sample's turns become one subject's events, in batches of at most MAX_BATCH. */
async function ingestTurns(elma: Elma, turns: readonly Turn[]): Promise<MemoryIds> {
  const ids: MemoryIds = new Map();
  for (let done = 0; done < turns.length; done += MAX_BATCH) {
    const batch = turns.slice(done, done + MAX_BATCH);
    const events = batch.map((turn) => ({
      subject: turn.sample_id,
      occurredAt: turnTime(turn),
      activity: 'dialog.turn',
      content: { text: `${turn.speaker}: ${turn.text}${turn.blip_caption ? ` [image: ${turn.blip_caption}]` : ''}` },
      source: { system: 'locomo', externalId: turn.dia_id, channel: 'chat' },
      purposes: [PURPOSE],
      ...(SESSIONS && turn.session != null ? { session: `${turn.sample_id}/s${turn.session}` } : {}),
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

/** Runs every answerable question of categories 1-4 through each variant, restricted to its own sample. */
async function askQuestions(elma: Elma, runnable: readonly Runnable[], questions: readonly Question[], ids: MemoryIds) {
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

  // Query vectors only when a variant runs the dense route; timed apart from the searches.
  const embedStart = performance.now();
  const vectors: Float32Array[] = [];
  if (runnable.some(({ variant }) => variant.routes !== 'bm25')) {
    for (let i = 0; i < answerable.length; i += EMBED_BATCH) {
      vectors.push(
        ...(await elma.embedder.embed(
          answerable.slice(i, i + EMBED_BATCH).map((a) => a.question.question),
          'query',
        )),
      );
    }
  }
  const embedSeconds = (performance.now() - embedStart) / 1000;
  const none = new Float32Array(elma.embedder.dimensions);
  const now = new Date().toISOString();
  const scored: ScoredQuestion[] = [];
  let searches = 0;
  for (const [i, { question, evidence }] of answerable.entries()) {
    // The owner of an episodic memory is its subject: one clause keeps the search inside this sample.
    const filter: IndexFilter = {
      kinds: ['episodic'],
      statuses: ['active', 'disputed'],
      maxSensitivity: 'restricted',
      now,
      clauses: [{ ruleId: 'eval', maxSensitivity: 'restricted', owner: question.sample_id }],
    };
    for (const { variant, index } of runnable) {
      const hits = await searchVariant(index, variant, elma.config.recall, {
        tenant: TENANT,
        text: question.question,
        vector: vectors[i] ?? none,
        limit: MAX_DEPTH,
        filter,
      });
      searches++;
      if (hits.some((hit) => hit.record.subject !== question.sample_id))
        throw new Error(`a search for ${question.sample_id} returned another sample's memory`);
      scored.push({
        question: `${question.sample_id}/${question.qa_index}`,
        category: question.category,
        route: variant.name,
        score: scoreRetrieval(
          hits.map((hit) => hit.record.id),
          evidence,
        ),
      });
    }
  }
  return { scored, evaluated: answerable.length, adversarial, skipped, searches, embedSeconds };
}

/** One block per category (overall last), one row per variant, unavailable variants saying why. */
function renderTable({ rows, has }: EvalRun): string {
  const header = ['category', 'variant', 'n', 'R@5', 'R@10', '95 % CI', 'R@20', 'MRR'];
  const categories = [...new Set(rows.map((r) => r.category))];
  const cells: string[][] = [];
  for (const category of categories) {
    const label = category === 'all' ? 'all (1-4)' : `${category} ${CATEGORIES[category]}`;
    for (const variant of VARIANTS) {
      const row = rows.find((r) => r.category === category && r.route === variant.name);
      const why = unavailable(variant, has);
      if (row) {
        const interval = row.recall10Interval ? `[${row.recall10Interval.low.toFixed(3)}, ${row.recall10Interval.high.toFixed(3)}]` : '';
        cells.push([
          label,
          variant.name,
          String(row.n),
          row.recall5.toFixed(3),
          row.recall10.toFixed(3),
          interval,
          row.recall20.toFixed(3),
          row.mrr.toFixed(3),
        ]);
      } else if (why) cells.push([label, variant.name, '', `   not available (${why})`]);
    }
  }
  const measured = cells.filter((c) => c.length === header.length);
  // Labels size to every row, figures to the measured ones.
  const widths = header.map((h, i) => Math.max(h.length, ...(i < 3 ? cells : measured).map((c) => c[i].length)));
  // Text columns left-aligned, figures right-aligned; an unavailable row's reason runs across the figures.
  const render = (row: string[]) => row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [render(header), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(render)].join('\n');
}

function renderGains(list: readonly Gain[]): string {
  if (list.length === 0) return '  (no pair of variants ran)';
  return list
    .map(
      (g) =>
        `  ${`${g.route} over ${g.over}`.padEnd(26)}  ${g.mean >= 0 ? '+' : ''}${g.mean.toFixed(3)}  [${g.low >= 0 ? '+' : ''}${g.low.toFixed(3)}, ${g.high >= 0 ? '+' : ''}${g.high.toFixed(3)}]${g.low > 0 || g.high < 0 ? '' : '  (interval includes 0)'}`,
    )
    .join('\n');
}
