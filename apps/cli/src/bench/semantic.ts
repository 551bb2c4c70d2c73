import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_POLICY, episodicIdFor, type IndexedMemory, type Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { eventBatch, prng, query, sentence } from './corpus';
import { embedderEnv } from './embedder-env';
import type { LoadRow } from './load';
import { percentiles } from './stats';

export interface SemanticOptions {
  /** Memories of the measured tenant, in increasing order, e.g. [10_000, 100_000]. */
  sizes: number[];
  /** Distinct texts embedded by the model; the memories reuse their vectors with noise. */
  pool: number;
  /** Standard deviation of the gaussian noise added to each coordinate of a reused vector (before re-normalising). */
  noise: number;
  /** Recalls timed at each size (after a warm-up of a tenth as many). */
  queries: number;
  /** Ingests of one batch timed from the call to searchable and to embedded. */
  lagProbes: number;
}

export const DEFAULT_SEMANTIC: SemanticOptions = { sizes: [10_000, 100_000], pool: 1_000, noise: 0.02, queries: 200, lagProbes: 20 };

const TENANT = 'bench_semantic';
const EMBED_BATCH = 32;
const FILL_BATCH = 100;
const COPY_BATCH = 1_000;
const LAG_BATCH = 10;
const LAG_TIMEOUT_MS = 120_000;

const principal: Principal = { tenant: TENANT, sub: 'bench', roles: ['agent'], purposes: ['support'], clearance: 'internal' };

/**
 * The real-model section of `npm run bench` (ELMA_EMBEDDER and the
 * ELMA_EMBEDDING_* settings of the environment choose the model):
 *
 * - embedding throughput: `pool` distinct texts embedded as documents, in batches;
 * - query embedding alone, one query per call;
 * - ingest -> BM25-searchable and ingest -> embedded, batch by batch, on a running projection;
 * - recall at each size, query embedding included, beside the bare search with the vector given.
 *
 * Embedding 100,000 texts with a CPU model takes more than an hour, so the
 * measured tenant is not filled through the model: its memories are made by
 * the real ingest and projection in a scratch ELMA (hashing embedder, same
 * dimensions), then copied into the measured index with the vector of their
 * text from the pool, plus gaussian noise so that no two vectors are equal.
 * The texts repeat the pool's; the query vectors are the model's own.
 */
export async function semanticBench(options: SemanticOptions, progress: (message: string) => void = () => undefined): Promise<LoadRow[]> {
  const rows: LoadRow[] = [];
  const root = mkdtempSync(join(tmpdir(), 'elma-bench-semantic-'));
  const measured = await openElma(loadConfig({ ELMA_DATA_DIR: join(root, 'measured'), ...embedderEnv() }), { logger: silentLogger });
  try {
    const { embedder } = measured;
    rows.push({ what: `embedder (semantic section)`, figure: `${embedder.model}, ${embedder.dimensions} dimensions` });
    if (!embedder.semantic) {
      rows.push({ what: `  semantic section skipped`, figure: `not a semantic embedder; set ELMA_EMBEDDER (see README)` });
      return rows;
    }
    progress(`semantic: embedding ${options.pool} distinct texts with ${embedder.model}; load avg ${loadavg()[0].toFixed(2)}`);
    const pool = await embedPool(measured, options.pool, rows);
    await measureQueryEmbedding(measured, rows);
    await measureLag(root, options.lagProbes, rows, progress);

    const { version: _version, ...policy } = DEFAULT_POLICY;
    await measured.policies.put(TENANT, policy, 'bench');
    const scratch = await openElma(
      loadConfig({
        ELMA_DATA_DIR: join(root, 'scratch'),
        ELMA_EMBEDDER: 'hashing',
        ELMA_EMBEDDING_DIMENSIONS: String(embedder.dimensions),
      }),
      { logger: silentLogger },
    );
    try {
      await scratch.policies.put(TENANT, policy, 'bench');
      await scratch.runner.start();
      const random = prng(11);
      const noise = gaussian(prng(12), options.noise);
      // Every vector copied, by id, and its text: exact search to compare the graph with.
      const copied = new Map<string, Float32Array>();
      const texts = new Map<string, string>();
      let loaded = 0;
      for (const size of options.sizes) {
        progress(`semantic: filling to ${size} memories (texts and vectors from the pool, noise sd ${options.noise})`);
        for (; loaded < size; loaded += FILL_BATCH) {
          const n = Math.min(FILL_BATCH, size - loaded);
          const batch = eventBatch(random, n, loaded, TENANT);
          for (const event of batch.events) event.content.text = pool.texts[Math.floor(random() * pool.texts.length)];
          await scratch.ingest.ingest(principal, batch);
        }
        await scratch.runner.waitFor(await scratch.log.headPosition(), 30 * 60_000);
        const start = performance.now();
        await copyWithPoolVectors(scratch, measured, pool, noise, copied, texts);
        progress(
          `semantic: ${copied.size} memories in the measured index (copy + graph ${((performance.now() - start) / 1000).toFixed(1)} s)`,
        );
        await measureRecall(measured, options.queries, rows);
        await measureGraphRecall(measured, copied, texts, rows);
      }
    } finally {
      await scratch.close();
    }
  } finally {
    await measured.close();
    rmSync(root, { recursive: true, force: true });
  }
  return rows;
}

interface Pool {
  texts: string[];
  vectors: Map<string, Float32Array>;
}

/** `size` distinct corpus texts (half Chinese) embedded as documents: the throughput figure, and the pool. */
async function embedPool(elma: Elma, size: number, rows: LoadRow[]): Promise<Pool> {
  const random = prng(21);
  const distinct = new Set<string>();
  while (distinct.size < size) distinct.add(sentence(random, random() < 0.5));
  const texts = [...distinct];
  const vectors = new Map<string, Float32Array>();
  const start = performance.now();
  for (let i = 0; i < texts.length; i += EMBED_BATCH) {
    const batch = texts.slice(i, i + EMBED_BATCH);
    const embedded = await elma.embedder.embed(batch, 'document');
    batch.forEach((text, j) => vectors.set(text, embedded[j]));
  }
  const seconds = (performance.now() - start) / 1000;
  rows.push({
    what: `embedding throughput (documents, batches of ${EMBED_BATCH}, ${size} texts, en/zh)`,
    figure: `${(size / seconds).toFixed(1)} texts/s (load avg ${loadavg()[0].toFixed(2)})`,
  });
  return { texts, vectors };
}

/** One query per call, as recall embeds it. */
async function measureQueryEmbedding(elma: Elma, rows: LoadRow[]): Promise<void> {
  const random = prng(31);
  const times: number[] = [];
  for (let i = 0; i < 110; i++) {
    const text = query(random);
    const start = performance.now();
    await elma.embedder.embed([text], 'query');
    if (i >= 10) times.push(performance.now() - start);
  }
  const { p50, p95 } = percentiles(times);
  rows.push({ what: `query embedding alone (one query per call)`, figure: `p50 ${p50.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms` });
}

/**
 * From the ingest call to BM25-searchable (a search for the batch's own word
 * finds all of it) and to embedded (every memory of the batch has its
 * vector), batch after batch on a running projection, in a fresh ELMA of the
 * model under test.
 */
async function measureLag(root: string, probes: number, rows: LoadRow[], progress: (message: string) => void): Promise<void> {
  const elma = await openElma(loadConfig({ ELMA_DATA_DIR: join(root, 'lag'), ...embedderEnv() }), { logger: silentLogger });
  try {
    progress(`semantic: ${probes} ingests of ${LAG_BATCH} events, timed to searchable and to embedded`);
    const { version: _version, ...policy } = DEFAULT_POLICY;
    await elma.policies.put(TENANT, policy, 'bench');
    await startBackgroundWork(elma);
    const random = prng(41);
    const searchable: number[] = [];
    const embedded: number[] = [];
    const now = new Date().toISOString();
    for (let probe = 0; probe < probes; probe++) {
      const marker = `lagprobe${probe}q${Math.floor(random() * 1e6)}`;
      const batch = eventBatch(random, LAG_BATCH, probe * LAG_BATCH, TENANT);
      for (const event of batch.events) event.content.text = `${marker} ${event.content.text}`;
      const start = performance.now();
      const result = await elma.ingest.ingest(principal, batch);
      const ids = result.events.map((ref) => episodicIdFor(ref.id));
      const deadline = start + LAG_TIMEOUT_MS;
      let found: number | undefined;
      while (performance.now() < deadline) {
        if (found === undefined) {
          const hits = await elma.index.search({
            tenant: TENANT,
            text: marker,
            limit: LAG_BATCH * 2,
            filter: { statuses: ['active'], maxSensitivity: 'restricted', now },
          });
          if (hits.length >= LAG_BATCH) found = performance.now() - start;
        }
        if (found !== undefined) {
          const memories = await Promise.all(ids.map((id) => elma.index.get(TENANT, id)));
          if (memories.every((m) => m !== undefined && hasVector(m))) {
            searchable.push(found);
            embedded.push(performance.now() - start);
            break;
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      if (embedded.length !== probe + 1) throw new Error(`batch ${probe} was not searchable and embedded within ${LAG_TIMEOUT_MS} ms`);
    }
    const s = percentiles(searchable);
    const e = percentiles(embedded);
    rows.push(
      {
        what: `ingest -> BM25-searchable (batches of ${LAG_BATCH}, ${probes} batches)`,
        figure: `p50 ${s.p50.toFixed(0)} ms, p95 ${s.p95.toFixed(0)} ms`,
      },
      { what: `ingest -> embedded (same batches)`, figure: `p50 ${e.p50.toFixed(0)} ms, p95 ${e.p95.toFixed(0)} ms` },
    );
  } finally {
    await elma.close();
  }
}

/** Starts what makes ingested events searchable and embedded: the projection (which embeds as it projects). */
async function startBackgroundWork(elma: Elma): Promise<void> {
  await elma.runner.start();
}

function hasVector(memory: IndexedMemory): boolean {
  return memory.vector !== undefined;
}

/** Copies the scratch tenant's memories not yet copied into the measured index, each with its text's pool vector plus noise. */
async function copyWithPoolVectors(
  scratch: Elma,
  measured: Elma,
  pool: Pool,
  noise: (vector: Float32Array) => Float32Array,
  copied: Map<string, Float32Array>,
  texts: Map<string, string>,
): Promise<void> {
  let batch: IndexedMemory[] = [];
  const flush = async () => {
    await measured.index.upsert(TENANT, batch);
    batch = [];
  };
  for await (const record of scratch.index.records(TENANT)) {
    if (copied.has(record.id)) continue;
    const vector = pool.vectors.get(record.content.text);
    if (!vector) throw new Error(`memory ${record.id} has a text outside the pool`);
    const noisy = noise(vector);
    batch.push({ record, vector: noisy });
    copied.set(record.id, noisy);
    texts.set(record.id, record.content.text);
    if (batch.length >= COPY_BATCH) await flush();
  }
  if (batch.length > 0) await flush();
  await measured.index.flush();
}

/**
 * Recall through the service (policy, query embedding by the model, hybrid
 * search, packing) and the bare hybrid search with the query vector given,
 * alternating query by query.
 */
async function measureRecall(elma: Elma, queries: number, rows: LoadRow[]): Promise<void> {
  const count = await elma.index.count(TENANT);
  const random = prng(51);
  const warmup = Math.ceil(queries / 10);
  const texts = Array.from({ length: queries + warmup }, () => query(random));
  const now = new Date().toISOString();
  const recall: number[] = [];
  const embed: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < texts.length; i++) {
    let start = performance.now();
    await elma.recall.recall(principal, { query: texts[i], purpose: 'support', budgetTokens: 1000 });
    const r = performance.now() - start;
    start = performance.now();
    const [vector] = await elma.embedder.embed([texts[i]], 'query');
    const e = performance.now() - start;
    start = performance.now();
    await elma.index.search({
      tenant: TENANT,
      text: texts[i],
      vector,
      limit: 30,
      filter: { statuses: ['candidate', 'active', 'disputed', 'superseded', 'expired'], maxSensitivity: 'restricted', now },
    });
    const b = performance.now() - start;
    if (i >= warmup) {
      recall.push(r);
      embed.push(e);
      bare.push(b);
    }
  }
  const [r, e, b] = [recall, embed, bare].map(percentiles);
  const n = count.toLocaleString('en-US');
  rows.push(
    { what: `recall p50 @ ${n} memories, ${elma.embedder.model} (query embedding included)`, figure: `${r.p50.toFixed(2)} ms` },
    { what: `recall p95 @ ${n} memories, ${elma.embedder.model} (query embedding included)`, figure: `${r.p95.toFixed(2)} ms`, target: '' },
    { what: `  of which query embedding p95 (measured apart)`, figure: `${e.p95.toFixed(2)} ms` },
    { what: `  bare hybrid search p95, vector given`, figure: `${b.p95.toFixed(2)} ms (load avg ${loadavg()[0].toFixed(2)})` },
  );
}

const GRAPH_QUERIES = 100;
const GRAPH_K = 10;

/**
 * The dense route through the index (HNSW graph, the index's own expansion
 * settings) against exact search over the same vectors: the share of the
 * exact top 10 that the route returns in its top 10, for real query vectors.
 * The memories repeat the pool's texts, so the exact top 10 is often a few of
 * many noisy copies of one text; the share of the exact top 10's distinct
 * texts that the route's top 10 holds is printed beside it.
 */
async function measureGraphRecall(
  elma: Elma,
  vectors: ReadonlyMap<string, Float32Array>,
  textOf: ReadonlyMap<string, string>,
  rows: LoadRow[],
): Promise<void> {
  const random = prng(61);
  const texts = Array.from({ length: GRAPH_QUERIES }, () => query(random));
  const queryVectors = await elma.embedder.embed(texts, 'query');
  const now = new Date().toISOString();
  const entries = [...vectors];
  let found = 0;
  let textsWanted = 0;
  let textsFound = 0;
  let exactMs = 0;
  for (const q of queryVectors) {
    const start = performance.now();
    const exact = topK(entries, q, GRAPH_K);
    exactMs += performance.now() - start;
    const hits = await elma.index.search({
      tenant: TENANT,
      text: '',
      vector: q,
      limit: GRAPH_K,
      filter: { statuses: ['candidate', 'active', 'disputed', 'superseded', 'expired'], maxSensitivity: 'restricted', now },
    });
    const returned = new Set(hits.map((h) => h.record.id));
    found += exact.filter((id) => returned.has(id)).length;
    const returnedTexts = new Set(hits.map((h) => h.record.content.text));
    const wantedTexts = new Set(exact.map((id) => textOf.get(id)!));
    textsWanted += wantedTexts.size;
    textsFound += [...wantedTexts].filter((text) => returnedTexts.has(text)).length;
  }
  rows.push({
    what: `  dense route recall@${GRAPH_K} vs exact search @ ${vectors.size.toLocaleString('en-US')} (${GRAPH_QUERIES} queries, index's HNSW settings)`,
    figure:
      `${(found / (GRAPH_QUERIES * GRAPH_K)).toFixed(3)} by memory, ${(textsFound / textsWanted).toFixed(3)} by distinct text ` +
      `(exact scan ${(exactMs / GRAPH_QUERIES).toFixed(0)} ms/query in JS)`,
  });
}

/** Ids of the k vectors nearest to `q` by dot product (all vectors are unit length). */
export function topK(entries: readonly (readonly [string, Float32Array])[], q: Float32Array, k: number): string[] {
  const best: { id: string; score: number }[] = [];
  for (const [id, v] of entries) {
    let dot = 0;
    for (let i = 0; i < v.length; i++) dot += v[i] * q[i];
    if (best.length < k || dot > best[best.length - 1].score) {
      best.push({ id, score: dot });
      best.sort((a, b) => b.score - a.score);
      if (best.length > k) best.pop();
    }
  }
  return best.map((b) => b.id);
}

/** Adds gaussian noise of standard deviation `sd` to each coordinate, then re-normalises (Box-Muller). */
export function gaussian(random: () => number, sd: number): (vector: Float32Array) => Float32Array {
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return (vector) => {
    const out = new Float32Array(vector.length);
    let sum = 0;
    for (let i = 0; i < vector.length; i++) {
      out[i] = vector[i] + sd * normal();
      sum += out[i] * out[i];
    }
    const length = Math.sqrt(sum);
    for (let i = 0; i < out.length; i++) out[i] /= length;
    return out;
  };
}
