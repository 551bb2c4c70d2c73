import { mkdirSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_POLICY, type Embedder, type EmbeddingRole, type Principal } from '@elma/domain';
import {
  HashingEmbedder,
  ensureLanggraph,
  ensureMem0,
  langgraphEnv,
  loadConfig,
  mem0Env,
  findRepoRoot,
  type PinnedPythonInstall,
} from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { Mem0Bridge } from '../eval/paper/systems/mem0';
import { eventBatch, prng, query } from './corpus';
import { percentiles } from './stats';

/**
 * `npm run bench:peers`: ELMA beside the memory libraries a user would pick instead, on the same corpus and the
 * same vectors, no LLM anywhere. Every system gets the bench corpus (bench/corpus.ts: English and Chinese business
 * chatter) and, for every text and query, the vector of ELMA's hashing embedder computed once by the bench:
 *
 * - ELMA: full governed recall through the service in this process (policy pushdown and re-check, hybrid BM25 +
 *   vector search, audit entry, usage, packing into a token budget), as `npm run bench` measures it. Its embedder
 *   here serves the precomputed vectors and says it is semantic, so that recall runs its dense route beside BM25
 *   as it does with a real model (with the plain hashing embedder, recall is BM25 alone).
 * - Mem0 OSS (PyPI mem0ai) on its FAISS vector store, `add(..., infer=False)`, `search` (vector only: FAISS has no
 *   keyword route in Mem0).
 * - LangGraph's SqliteStore (PyPI langgraph-checkpoint-sqlite) with its sqlite-vec vector search.
 *
 * The peers run in Python children (scripts/peers/bridge.py); their times are taken inside the child around the
 * library call, so the pipe between the processes is not counted against them. ELMA's are taken here around the
 * service call.
 *
 * At each size, every system is filled to `size - addSample` memories (untimed), then the last `addSample` are
 * added in batches of `batch`, timed: add throughput until searchable (ELMA: ingest, projection and embedding of
 * each batch). Then `warmup + queries` queries, the systems taking turns in a rotating order query by query so that
 * drift on a shared machine hits all of them; the warm-up queries are not counted.
 */
export interface PeersOptions {
  sizes: number[];
  /** Which systems run: `elma`, `mem0`, `langgraph`. */
  systems: SystemName[];
  queries: number;
  warmup: number;
  /** Memories added, timed, to reach each size. */
  addSample: number;
  /** Memories per add call (timed adds); fills go by FILL_BATCH. */
  batch: number;
  /** Results asked of each peer's search; ELMA packs into `budgetTokens` instead. */
  limit: number;
  budgetTokens: number;
}

export const SYSTEM_NAMES = ['elma', 'mem0', 'langgraph'] as const;
export type SystemName = (typeof SYSTEM_NAMES)[number];

export const DEFAULT_PEERS: PeersOptions = {
  sizes: [10_000, 100_000],
  systems: [...SYSTEM_NAMES],
  queries: 300,
  warmup: 30,
  addSample: 200,
  batch: 20,
  limit: 30,
  budgetTokens: 1000,
};

const FILL_BATCH = 100;
const TENANT = 'bench_peers';
const DIMENSIONS = 384;

/** One system's figures at one size. */
export interface PeerRow {
  size: number;
  system: SystemName;
  label: string;
  /** Memories per second, add call to searchable, over the timed adds (ELMA: searchable by BM25). */
  addPerSecond: number;
  /** ELMA only: memories per second until their vectors are in the index too. */
  embeddedPerSecond?: number;
  p50: number;
  p95: number;
  /** Results per query on average (ELMA: packed items). */
  resultsPerQuery: number;
  /** Whether a query that is one of the stored texts found that text (the harness's own check). */
  foundStoredText: boolean;
}

/** The outcome of a run: rows of the systems that ran, and why the others did not. */
export interface PeersReport {
  rows: PeerRow[];
  notRun: { system: SystemName; reason: string }[];
}

/** Milliseconds an add took until searchable and, for ELMA, until embedded. */
interface Added {
  ms: number;
  embeddedMs?: number;
}

/** What the bench asks of every system. */
interface BenchSystem {
  readonly name: SystemName;
  readonly label: string;
  /**
   * Adds the texts (with their vectors); resolves with the milliseconds to count until searchable (untimed fills
   * return 0) and, where vectors come later (ELMA), until they are embedded too.
   */
  add(texts: string[], vectors: Float32Array[], fill: boolean): Promise<Added>;
  /** After a fill: whatever the system left for later is done. */
  settle(): Promise<void>;
  search(text: string, vector: Float32Array): Promise<{ ms: number; texts: string[] }>;
  close(): Promise<void>;
}

export const SYSTEM_LABELS: Record<SystemName, string> = {
  elma: 'ELMA full recall (hybrid, policy, audit, packing)',
  mem0: 'Mem0 OSS + FAISS (infer off, vector only)',
  langgraph: 'LangGraph SqliteStore (sqlite-vec)',
};

/**
 * Runs the bench in `dir` (each system in a folder of its own) and returns its figures. A peer whose package
 * cannot be installed is reported in `notRun`; the others still run.
 */
export async function peersBench(
  dir: string,
  options: PeersOptions,
  log: (message: string) => void,
  /** Called with each size's rows as soon as they are measured (a long run shows its first sizes early). */
  onSize: (rows: PeerRow[]) => void = () => undefined,
): Promise<PeersReport> {
  if (endianness() !== 'LE') throw new Error('the peers bridge reads vectors as little-endian float32');
  const vectors = new PrecomputedVectors(new HashingEmbedder({ dimensions: DIMENSIONS }));
  const systems: BenchSystem[] = [];
  const notRun: PeersReport['notRun'] = [];
  const rows: PeerRow[] = [];
  try {
    for (const name of options.systems) {
      try {
        systems.push(await openSystem(name, join(dir, name), vectors, options));
      } catch (error) {
        notRun.push({ system: name, reason: error instanceof Error ? error.message : String(error) });
      }
    }
    const random = prng(42);
    let loaded = 0;
    let probe: string | undefined;
    for (const size of options.sizes) {
      const timedFrom = Math.max(loaded, size - options.addSample);
      log(`filling to ${timedFrom.toLocaleString('en-US')} memories`);
      for (let done = loaded; done < timedFrom; done += FILL_BATCH) {
        const texts = corpusTexts(random, Math.min(FILL_BATCH, timedFrom - done), done);
        probe ??= texts[0];
        await addToAll(systems, texts, vectors, true);
      }
      for (const system of systems) await system.settle();
      log(`adding ${(size - timedFrom).toLocaleString('en-US')} timed, in batches of ${options.batch}`);
      const addMs = new Map(systems.map((s) => [s.name, { ms: 0, embeddedMs: 0 }]));
      for (let done = timedFrom, turn = 0; done < size; done += options.batch, turn++) {
        const texts = corpusTexts(random, Math.min(options.batch, size - done), done);
        probe ??= texts[0];
        for (const [system, added] of await addToAll(rotate(systems, turn), texts, vectors, false)) {
          const total = addMs.get(system)!;
          total.ms += added.ms;
          total.embeddedMs += added.embeddedMs ?? 0;
        }
      }
      loaded = size;
      log(`searching: ${options.warmup} warm-up and ${options.queries} measured queries per system`);
      const searched = await searchAll(systems, options, vectors);
      const probeFound = await findStoredText(systems, probe!, vectors);
      const measured = rows.length;
      for (const system of systems) {
        const { p50, p95 } = percentiles(searched.ms.get(system.name)!);
        const added = addMs.get(system.name)!;
        rows.push({
          size,
          system: system.name,
          label: system.label,
          addPerSecond: (size - timedFrom) / (added.ms / 1000),
          ...(added.embeddedMs > 0 ? { embeddedPerSecond: (size - timedFrom) / (added.embeddedMs / 1000) } : {}),
          p50,
          p95,
          resultsPerQuery: searched.results.get(system.name)! / options.queries,
          foundStoredText: probeFound.get(system.name)!,
        });
      }
      onSize(rows.slice(measured));
    }
    return { rows, notRun };
  } finally {
    for (const system of systems) await system.close().catch(() => undefined);
  }
}

/** `n` texts of the bench corpus, the memories number `offset` onwards. */
function corpusTexts(random: () => number, n: number, offset: number): string[] {
  return eventBatch(random, n, offset, TENANT).events.map((event) => event.content.text);
}

/** Adds the same texts to every system, in the order given; the milliseconds each counted. */
async function addToAll(systems: BenchSystem[], texts: string[], vectors: PrecomputedVectors, fill: boolean) {
  const embedded = await vectors.embed(texts, 'document');
  const spent = new Map<SystemName, Added>();
  for (const system of systems) spent.set(system.name, await system.add(texts, embedded, fill));
  return spent;
}

/** Each query asked of every system, in an order that rotates query by query. */
async function searchAll(systems: BenchSystem[], options: PeersOptions, vectors: PrecomputedVectors) {
  const random = prng(7);
  const texts = Array.from({ length: options.warmup + options.queries }, () => query(random));
  const embedded = await vectors.embed(texts, 'query');
  const ms = new Map<SystemName, number[]>(systems.map((s) => [s.name, []]));
  const results = new Map<SystemName, number>(systems.map((s) => [s.name, 0]));
  for (let i = 0; i < texts.length; i++) {
    for (const system of rotate(systems, i)) {
      const found = await system.search(texts[i], embedded[i]);
      if (i < options.warmup) continue;
      ms.get(system.name)!.push(found.ms);
      results.set(system.name, results.get(system.name)! + found.texts.length);
    }
  }
  return { ms, results };
}

/** Whether each system, asked for one of the texts it stores, returns that text. */
async function findStoredText(systems: BenchSystem[], text: string, vectors: PrecomputedVectors) {
  const [vector] = await vectors.embed([text], 'query');
  const found = new Map<SystemName, boolean>();
  for (const system of systems)
    found.set(
      system.name,
      (await system.search(text, vector)).texts.some((t) => t.includes(text)),
    );
  return found;
}

const rotate = <T>(items: T[], by: number): T[] => items.map((_, i) => items[(i + by) % items.length]);

async function openSystem(name: SystemName, dir: string, vectors: PrecomputedVectors, options: PeersOptions): Promise<BenchSystem> {
  mkdirSync(dir, { recursive: true });
  switch (name) {
    case 'elma':
      return ElmaSystem.open(dir, vectors, options.budgetTokens);
    case 'mem0':
      return PythonPeer.open('mem0', dir, await ensureMem0(), mem0Env(join(dir, 'home')), options.limit);
    case 'langgraph':
      return PythonPeer.open('langgraph', dir, await ensureLanggraph(), langgraphEnv(join(dir, 'home')), options.limit);
  }
}

/**
 * The vectors every system is given: ELMA's hashing embedder's, computed once per text and kept. As ELMA's
 * embedder it says it is semantic, so that recall fuses the dense route with BM25 as with a real model.
 */
export class PrecomputedVectors implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly semantic = true;
  private readonly known = new Map<string, Float32Array>();

  constructor(private readonly hashing: HashingEmbedder) {
    this.model = `${hashing.model}-precomputed`;
    this.dimensions = hashing.dimensions;
  }

  /** Queries and documents are hashed alike (the hashing embedder ignores the role). */
  async embed(texts: string[], _role: EmbeddingRole): Promise<Float32Array[]> {
    return texts.map((text) => {
      let vector = this.known.get(text);
      if (!vector) this.known.set(text, (vector = this.hashing.embedOne(text)));
      return vector;
    });
  }
}

const principal: Principal = { tenant: TENANT, sub: 'bench', roles: ['agent'], purposes: ['support'], clearance: 'internal' };

/** ELMA in this process on real SQLite files, the default policy, recall through the service. */
class ElmaSystem implements BenchSystem {
  readonly name = 'elma';
  readonly label = SYSTEM_LABELS.elma;
  private offset = 0;

  private constructor(
    private readonly elma: Elma,
    private readonly budgetTokens: number,
  ) {}

  static async open(dir: string, vectors: PrecomputedVectors, budgetTokens: number): Promise<ElmaSystem> {
    const elma = await openElma(loadConfig({ ELMA_DATA_DIR: dir, ELMA_EMBEDDER: 'hashing' }), { logger: silentLogger, embedder: vectors });
    const { version: _version, ...policy } = DEFAULT_POLICY;
    await elma.policies.put(TENANT, policy, 'bench');
    await elma.runner.start();
    return new ElmaSystem(elma, budgetTokens);
  }

  /**
   * Ingest (validation, secret detection, sealing, append); a timed add also waits until the batch is projected
   * (searchable by BM25) and then until it is embedded (the vector route too).
   */
  async add(texts: string[], _vectors: Float32Array[], fill: boolean): Promise<Added> {
    const events = texts.map((text, i) => ({
      subject: `subject-${(this.offset + i) % 200}`,
      occurredAt: new Date(Date.UTC(2026, 0, 1) + (this.offset + i) * 60_000).toISOString(),
      activity: 'chat.turn',
      content: { text },
      source: { system: 'bench', externalId: `${TENANT}-${this.offset + i}`, channel: 'chat' },
      purposes: ['support'],
    }));
    this.offset += texts.length;
    const start = performance.now();
    await this.elma.ingest.ingest(principal, { events });
    if (fill) return { ms: 0 };
    await this.elma.runner.waitFor(await this.elma.log.headPosition(), 30 * 60_000);
    const ms = performance.now() - start;
    await this.elma.embeddings.waitForEmbedded(undefined, 30 * 60_000);
    return { ms, embeddedMs: performance.now() - start };
  }

  async settle(): Promise<void> {
    await this.elma.runner.waitFor(await this.elma.log.headPosition(), 30 * 60_000);
    await this.elma.embeddings.waitForEmbedded(undefined, 30 * 60_000);
  }

  async search(text: string): Promise<{ ms: number; texts: string[] }> {
    const start = performance.now();
    const result = await this.elma.recall.recall(principal, { query: text, purpose: 'support', budgetTokens: this.budgetTokens });
    const ms = performance.now() - start;
    return { ms, texts: result.items.map((item) => item.text) };
  }

  async close(): Promise<void> {
    await this.elma.close();
  }
}

const PEERS_BRIDGE = join(findRepoRoot(), 'scripts', 'peers', 'bridge.py');

const Found = (result: unknown) => result as { ms: number; texts: string[] };

/** A peer library in a Python child (scripts/peers/bridge.py); times come from inside the child. */
class PythonPeer implements BenchSystem {
  readonly label: string;

  private constructor(
    readonly name: 'mem0' | 'langgraph',
    private readonly bridge: Mem0Bridge,
    private readonly limit: number,
  ) {
    this.label = SYSTEM_LABELS[name];
  }

  static async open(
    name: 'mem0' | 'langgraph',
    dir: string,
    install: PinnedPythonInstall,
    env: Record<string, string>,
    limit: number,
  ): Promise<PythonPeer> {
    const bridge = Mem0Bridge.spawnScript(install.python, PEERS_BRIDGE, env, SYSTEM_LABELS[name]);
    try {
      await bridge.call('init', { system: name, dataDir: dir, dimensions: DIMENSIONS });
    } catch (error) {
      await bridge.stop();
      throw error;
    }
    return new PythonPeer(name, bridge, limit);
  }

  async add(texts: string[], vectors: Float32Array[], fill: boolean): Promise<Added> {
    const { ms } = (await this.bridge.call('add', { texts, vectors: vectors.map(encode), userId: TENANT, deferSave: fill })) as Added;
    return { ms: fill ? 0 : ms };
  }

  async settle(): Promise<void> {
    await this.bridge.call('flush', {});
  }

  async search(text: string, vector: Float32Array): Promise<{ ms: number; texts: string[] }> {
    return Found(await this.bridge.call('search', { query: text, vector: encode(vector), userId: TENANT, limit: this.limit }));
  }

  async close(): Promise<void> {
    await this.bridge.stop();
  }
}

/** A vector as the bridge reads it: base64 of little-endian float32 (this machine's order, checked by `peersBench`). */
const encode = (vector: Float32Array): string => Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
