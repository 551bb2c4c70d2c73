import { SENSITIVITY_RANK, type Embedder, type Sensitivity } from '@elma/domain';
import { createTokenCounter } from '@elma/shared';
import { evalEmbedder } from '../embedder';
import { contentTokens, eventText } from '../metrics';
import type { Actor, ContextItem, MemorySystem, Probe, Recalled, Step, SystemSpec } from '../types';

/**
 * The baselines of paper §7.3 that run here without a model: B1 full
 * context, B2 sliding window with a recursive extractive summary, B3 basic
 * RAG. They keep everything in memory (the byte scan reads their
 * `snapshot()`), know no policy, audit nothing and raise no flag. Each packs
 * its items as holding now (`current`) and cites the steps it copied from.
 * Erasure is what such a system can do: delete the subject's raw events
 * (B1, B2) or chunks (B3). B2's summary keeps the sentences it already took
 * from them: a summary made without lineage cannot be erased, and the byte
 * scan shows it.
 */

const count = createTokenCounter();

/** An event as a baseline keeps it. */
interface Held {
  key: string;
  at: string;
  tenant: string;
  subject: string;
  text: string;
  sensitivity: Sensitivity;
  project?: string;
}

function held(step: Extract<Step, { type: 'ingest' | 'correct' }>): Held {
  const { event } = step;
  return {
    key: step.key,
    at: step.at,
    tenant: step.actor.tenant,
    subject: event.subject,
    text: eventText(event),
    sensitivity: event.sensitivity ?? 'internal',
    ...(event.project ? { project: event.project } : {}),
  };
}

const line = (at: string, text: string) => `- (${at.slice(0, 10)}) ${text.replace(/\s+/g, ' ').trim()}`;

/** A context from lines in the order given, with its token count; `heading` lines are not items. */
function packed(parts: ({ heading: string } | { at: string; item: ContextItem })[], started: number): Recalled {
  const items: ContextItem[] = [];
  const lines: string[] = [];
  for (const part of parts) {
    if ('heading' in part) lines.push(part.heading);
    else {
      lines.push(line(part.at, part.item.text));
      items.push(part.item);
    }
  }
  const context = lines.join('\n');
  return { context, items, tokens: count(context), ms: performance.now() - started, audited: false };
}

/** What all three share: no flags, no audit, in memory. */
abstract class InMemoryBaseline implements MemorySystem {
  abstract readonly name: string;
  abstract apply(step: Step): Promise<void>;
  abstract recall(probe: Probe, budgetTokens: number): Promise<Recalled>;
  /** Everything held, as plain data (serialised for the byte scan and the storage figure). */
  protected abstract state(): unknown;

  async flags() {
    return [];
  }
  async instructionFlagged() {
    return [];
  }
  async storageBytes(): Promise<number> {
    return (await this.snapshot()).length;
  }
  dataDir(): undefined {
    return undefined;
  }
  async snapshot(): Promise<Buffer> {
    return Buffer.from(JSON.stringify(this.state()), 'utf8');
  }
  async close(): Promise<void> {}
}

/** B1: every event of the tenant in time order; over budget, the most recent that fit. */
export class FullContext extends InMemoryBaseline {
  readonly name = 'B1';
  private events: Held[] = [];

  async apply(step: Step): Promise<void> {
    if (step.type === 'ingest' || step.type === 'correct') this.events.push(held(step));
    if (step.type === 'erase') this.events = this.events.filter((e) => !(e.tenant === step.actor.tenant && e.subject === step.subject));
  }

  async recall(probe: Probe, budgetTokens: number): Promise<Recalled> {
    const started = performance.now();
    const mine = this.events.filter((e) => e.tenant === probe.actor.tenant);
    const kept = newestWithin(mine, budgetTokens, (e) => count(line(e.at, e.text)) + 1);
    return packed(
      kept.map((e) => ({ at: e.at, item: { text: e.text, mark: 'current', cites: [e.key] } })),
      started,
    );
  }

  protected state() {
    return this.events;
  }
}

/** The newest entries whose costs add up to at most `budget`, returned in their original (time) order. */
function newestWithin<T>(entries: readonly T[], budget: number, cost: (entry: T) => number): T[] {
  const kept: T[] = [];
  let used = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const c = cost(entries[i]);
    if (used + c > budget) break;
    used += c;
    kept.unshift(entries[i]);
  }
  return kept;
}

/** A sentence of B2's summary with the event it was taken from. */
interface Sentence {
  text: string;
  key: string;
  at: string;
}

/** Events kept verbatim in B2's window. */
export const WINDOW_EVENTS = 12;
/** B2 re-summarises when its summary exceeds this many sentences, keeping `SUMMARY_KEEP` of them. */
export const SUMMARY_MAX = 24;
export const SUMMARY_KEEP = 12;

/** Sentences of a text: split after . ! ? and the Chinese 。！？；, and at line breaks. */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?。！？；;])\s*|\n+/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * The `keep` most central sentences, in their original order: a sentence's
 * centrality is the sum of its TF-IDF cosine similarities to the others
 * (LexRank's degree, unthresholded), over the same content tokens the
 * metrics use, Chinese and English alike. Ties keep the later sentence.
 */
export function centralSentences<T extends { text: string }>(pool: readonly T[], keep: number): T[] {
  if (pool.length <= keep) return [...pool];
  const bags = pool.map((s) => [...contentTokens(s.text)]);
  const df = new Map<string, number>();
  for (const bag of bags) for (const token of bag) df.set(token, (df.get(token) ?? 0) + 1);
  const vectors = bags.map((bag) => {
    const v = new Map(bag.map((t) => [t, Math.log((1 + pool.length) / (1 + df.get(t)!)) + 1]));
    const norm = Math.sqrt([...v.values()].reduce((sum, w) => sum + w * w, 0)) || 1;
    for (const [t, w] of v) v.set(t, w / norm);
    return v;
  });
  const centrality = vectors.map((v, i) =>
    vectors.reduce((sum, u, j) => {
      if (i === j) return sum;
      let dot = 0;
      for (const [t, w] of v) dot += w * (u.get(t) ?? 0);
      return sum + dot;
    }, 0),
  );
  const chosen = new Set(
    centrality
      .map((c, i) => ({ c, i }))
      .sort((a, b) => b.c - a.c || b.i - a.i)
      .slice(0, keep)
      .map((x) => x.i),
  );
  return pool.filter((_, i) => chosen.has(i));
}

/**
 * B2: the last `WINDOW_EVENTS` events of the tenant verbatim, and a summary
 * of the older ones: an event leaving the window adds its sentences to the
 * summary; past `SUMMARY_MAX` sentences the summary is summarised again
 * (`centralSentences`), so old summaries are re-summarised as it grows.
 * No model: extractive only. The summary gets a third of the budget, the
 * window the rest (newest first), then the summary any room left.
 */
export class WindowSummary extends InMemoryBaseline {
  readonly name = 'B2';
  private readonly windows = new Map<string, Held[]>();
  private readonly summaries = new Map<string, Sentence[]>();

  async apply(step: Step): Promise<void> {
    if (step.type === 'ingest' || step.type === 'correct') {
      const tenant = step.actor.tenant;
      const window = this.windows.get(tenant) ?? [];
      window.push(held(step));
      const summary = this.summaries.get(tenant) ?? [];
      while (window.length > WINDOW_EVENTS) {
        const old = window.shift()!;
        summary.push(...sentences(old.text).map((text) => ({ text, key: old.key, at: old.at })));
      }
      this.windows.set(tenant, window);
      this.summaries.set(tenant, summary.length > SUMMARY_MAX ? centralSentences(summary, SUMMARY_KEEP) : summary);
    }
    if (step.type === 'erase') {
      const window = this.windows.get(step.actor.tenant);
      if (window)
        this.windows.set(
          step.actor.tenant,
          window.filter((e) => e.subject !== step.subject),
        );
    }
  }

  async recall(probe: Probe, budgetTokens: number): Promise<Recalled> {
    const started = performance.now();
    const window = this.windows.get(probe.actor.tenant) ?? [];
    const summary = this.summaries.get(probe.actor.tenant) ?? [];
    const cost = (s: { at: string; text: string }) => count(line(s.at, s.text)) + 1;
    const headings = count('Summary of earlier events:') + count('Recent events:') + 2;
    const available = Math.max(0, budgetTokens - headings);
    let summaryPart = newestWithin(summary, Math.floor(available / 3), cost);
    const windowPart = newestWithin(window, available - summaryPart.reduce((sum, s) => sum + cost(s), 0), cost);
    const left = available - windowPart.reduce((sum, e) => sum + cost(e), 0);
    summaryPart = newestWithin(summary, left, cost);
    return packed(
      [
        { heading: 'Summary of earlier events:' },
        ...summaryPart.map((s) => ({ at: s.at, item: { text: s.text, mark: 'current' as const, cites: [s.key] } })),
        { heading: 'Recent events:' },
        ...windowPart.map((e) => ({ at: e.at, item: { text: e.text, mark: 'current' as const, cites: [e.key] } })),
      ],
      started,
    );
  }

  protected state() {
    return { windows: Object.fromEntries(this.windows), summaries: Object.fromEntries(this.summaries) };
  }
}

/** Characters per B3 chunk (about 80 to 150 tokens of English or Chinese). */
export const CHUNK_CHARS = 400;

/** Fixed-size chunks of at most `size` characters, cut at the last space or punctuation before the limit when there is one. */
export function chunks(text: string, size = CHUNK_CHARS): string[] {
  const out: string[] = [];
  let rest = text.trim();
  while (rest.length > size) {
    const head = rest.slice(0, size);
    const cut = Math.max(head.lastIndexOf(' '), ...['。', '，', '；', '.', ','].map((p) => head.lastIndexOf(p) + 1));
    const at = cut > size / 2 ? cut : size;
    out.push(rest.slice(0, at).trim());
    rest = rest.slice(at).trim();
  }
  if (rest.length > 0) out.push(rest);
  return out;
}

interface Chunk extends Held {
  vector?: Float32Array;
}

/** B3 retrieves at most this many chunks before packing them into the budget. */
export const RAG_TOP_K = 20;

/**
 * B3: every event cut into fixed-size chunks, embedded with the shared
 * embedder (the chunks written since the last search in one batch before
 * it, outside the recall's timing: that is ingest work), the
 * top `RAG_TOP_K` by cosine similarity to the query packed in rank order
 * until the budget. No lifecycle (nothing supersedes or expires), a
 * read-side filter only: the actor's tenant, and the event's sensitivity
 * within the actor's clearance and its project the actor's, when the event
 * and the actor have them.
 */
export class BasicRag extends InMemoryBaseline {
  readonly name = 'B3';
  private chunks: Chunk[] = [];

  constructor(private readonly embedder: Embedder) {
    super();
  }

  async apply(step: Step): Promise<void> {
    if (step.type === 'ingest' || step.type === 'correct') {
      const event = held(step);
      this.chunks.push(...chunks(event.text).map((text) => ({ ...event, text })));
    }
    if (step.type === 'erase') this.chunks = this.chunks.filter((c) => !(c.tenant === step.actor.tenant && c.subject === step.subject));
  }

  async recall(probe: Probe, budgetTokens: number): Promise<Recalled> {
    // The chunks written since the last search are embedded first: ingest work, so not part of the recall's time.
    const pending = this.chunks.filter((c) => !c.vector);
    if (pending.length > 0) {
      const vectors = await this.embedder.embed(
        pending.map((c) => c.text),
        'document',
      );
      pending.forEach((c, i) => (c.vector = vectors[i]));
    }
    const started = performance.now();
    const [query] = await this.embedder.embed([probe.query], 'query');
    const ranked = this.chunks
      .filter((c) => readable(c, probe.actor))
      .map((c) => ({ c, score: dot(c.vector!, query) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, RAG_TOP_K);
    const parts: { at: string; item: ContextItem }[] = [];
    let used = 0;
    for (const { c } of ranked) {
      const cost = count(line(c.at, c.text)) + 1;
      if (used + cost > budgetTokens) continue;
      used += cost;
      parts.push({ at: c.at, item: { text: c.text, mark: 'current', cites: [c.key] } });
    }
    return packed(parts, started);
  }

  override async storageBytes(): Promise<number> {
    return (await this.snapshot()).length + this.chunks.length * this.embedder.dimensions * 4;
  }

  protected state() {
    return this.chunks.map(({ vector: _vector, ...rest }) => rest);
  }
}

function readable(chunk: Held, actor: Actor): boolean {
  if (chunk.tenant !== actor.tenant) return false;
  if (SENSITIVITY_RANK[chunk.sensitivity] > SENSITIVITY_RANK[actor.clearance ?? 'internal']) return false;
  return !(chunk.project && actor.project && chunk.project !== actor.project);
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
  return sum;
}

const NEEDS_MODEL = 'needs an LLM at write time';

export const BASELINE_SYSTEMS: SystemSpec[] = [
  { id: 'B1', label: 'B1 full context', create: async () => new FullContext() },
  { id: 'B2', label: 'B2 window + extractive summary', create: async () => new WindowSummary() },
  { id: 'B3', label: 'B3 basic RAG (dense only)', create: async () => new BasicRag((await evalEmbedder()).embedder) },
  {
    id: 'B4',
    label: 'B4 MemGPT-style paging',
    notRun: `${NEEDS_MODEL}: the agent itself decides what to page in and out by function calls (Letta needs a chat model and its server)`,
    create: notRunnable('B4'),
  },
  {
    id: 'B6',
    label: 'B6 Zep-style temporal graph',
    notRun: `${NEEDS_MODEL}: Graphiti extracts entities and edges with a chat model, and Zep runs as a service with a graph database (Neo4j), neither available here`,
    create: notRunnable('B6'),
  },
  {
    id: 'B7',
    label: 'B7 A-MEM note network',
    notRun: `${NEEDS_MODEL}: every note's keywords, tags, links and memory evolution are generated by a chat model`,
    create: notRunnable('B7'),
  },
];

function notRunnable(id: string): SystemSpec['create'] {
  return () => Promise.reject(new Error(`${id} is not run here`));
}
