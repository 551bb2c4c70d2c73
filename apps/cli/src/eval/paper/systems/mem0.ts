import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import type { Embedder, EmbeddingRole } from '@elma/domain';
import { MEM0_BRIDGE, MEM0_VERSION, listFiles, ensureMem0, findMem0, mem0Env } from '@elma/infra';
import { countTokens } from '@elma/shared';
import type { ContextItem, MemorySystem, Probe, Recalled, Step, SystemSpec } from '../types';

/**
 * Row B5 of the paper's Table 1: the real Mem0 OSS package (PyPI `mem0ai`, pinned in scripts/mem0/requirements.txt)
 * as far as it runs without an LLM: `add` with inference off (the text is stored as it came), `search` (dense
 * only: its BM25 route needs fastembed's downloaded model, its entity boost spaCy, neither installed), `delete`.
 * It embeds with ELMA's embedder, served to it on a loopback `/v1/embeddings` (see `serveRoleEmbeddings`).
 *
 * What Mem0 has and what it lacks, mapped step by step:
 * - ingest, correct: `add(text, user_id = tenant, metadata = {step, subject, project, sensitivity})`. A
 *   correction is one more memory: Mem0 without its LLM has no conflict resolution.
 * - erase: `get_all` with the tenant and the subject as filters, then `delete` of each id. Mem0 keeps the text of
 *   a deleted memory in its history table (history.db): the byte scan of `dataDir()` finds it, as it should.
 * - policy, legal-hold: not supported (Mem0 has no read policy and no holds); the step is a no-op.
 * - recall: `search(query, filters = {user_id: tenant})`, the results packed in score order, one plain line
 *   each, until the next one would pass the budget; every item is marked current and cites the step key Mem0
 *   returns in its metadata. Scoping by tenant is a read-side filter, Mem0's only one.
 */
export const MEM0_ID = 'B5';
export const MEM0_LABEL = 'Mem0 OSS (infer off)';
/** Memories asked of `search` per recall; the budget decides how many are packed. */
export const MEM0_SEARCH_LIMIT = 50;

/** Why the row cannot run, once `prepareMem0` tried to install it and failed. */
let installFailure: string | undefined;

/**
 * Installs Mem0 (`ensureMem0`) unless it is there; remembers the exact reason when it cannot be, so that
 * `notRun` of every Mem0 row says it. Returns that reason, undefined when Mem0 is ready.
 */
export async function prepareMem0(): Promise<string | undefined> {
  try {
    await ensureMem0();
    installFailure = undefined;
  } catch (error) {
    installFailure = error instanceof Error ? error.message : String(error);
  }
  return installFailure;
}

/** Why Mem0 cannot run here, read when asked: the install failure, or that it is not installed. */
export function mem0NotRun(): string | undefined {
  if (findMem0()) return undefined;
  return installFailure ?? `mem0ai ${MEM0_VERSION} is not installed in .tools/mem0: run \`node scripts/ensure-mem0.mjs\``;
}

/** The B5 row, embedding with `embedder` (the evaluation's shared one, or a function that opens it on first use). */
export function mem0System(embedder: Embedder | (() => Promise<Embedder>)): SystemSpec {
  const resolve = typeof embedder === 'function' ? embedder : () => Promise.resolve(embedder);
  return {
    id: MEM0_ID,
    label: MEM0_LABEL,
    get notRun() {
      return mem0NotRun();
    },
    create: async (dir) => openMem0(dir, await resolve()),
  };
}

/** Mem0 did something the baseline forbids (called its LLM, reached off the machine), or its bridge failed. */
export class Mem0Failed extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'Mem0Failed';
  }
}

/** Starts the embedding endpoint and the bridge in `dir`; stops both if either fails to start. */
export async function openMem0(dir: string, embedder: Embedder): Promise<Mem0System> {
  const install = findMem0();
  if (!install) throw new Mem0Failed('EVAL.MEM0_UNAVAILABLE', mem0NotRun()!);
  await mkdir(dir, { recursive: true });
  const endpoint = await serveRoleEmbeddings(embedder);
  let bridge: Mem0Bridge | undefined;
  try {
    bridge = Mem0Bridge.spawn(install.python, dir);
    await bridge.call('init', { dataDir: dir, embeddingRoot: endpoint.baseUrl, model: embedder.model, dimensions: embedder.dimensions });
    return new Mem0System(dir, bridge, endpoint);
  } catch (error) {
    await bridge?.stop();
    await endpoint.close();
    throw error;
  }
}

const SearchResults = z.object({
  results: z.array(
    z.object({ id: z.string(), memory: z.string(), score: z.number().nullable(), metadata: z.record(z.string(), z.unknown()) }),
  ),
});

export class Mem0System implements MemorySystem {
  readonly name = `${MEM0_ID} ${MEM0_LABEL}`;
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly bridge: Mem0Bridge,
    private readonly endpoint: EmbeddingEndpoint,
  ) {}

  async apply(step: Step): Promise<void> {
    this.endpoint.assertNoLlmCall();
    switch (step.type) {
      case 'ingest':
      case 'correct': {
        const { event, actor } = step;
        const metadata = {
          step: step.key,
          subject: event.subject,
          sensitivity: event.sensitivity,
          ...(event.project ? { project: event.project } : {}),
        };
        await this.bridge.call('add', { text: event.content.text, userId: actor.tenant, metadata });
        break;
      }
      case 'erase':
        await this.erase(step.actor.tenant, step.subject);
        break;
      case 'policy':
      case 'legal-hold':
        // Not supported by Mem0: no read policy, no holds.
        break;
    }
    this.endpoint.assertNoLlmCall();
  }

  /** Deletes every memory of `subject` in `tenant`, listing again until none is left (`get_all` pages). */
  private async erase(tenant: string, subject: string): Promise<void> {
    const deleted = new Set<string>();
    for (;;) {
      const listed = SearchResults.parse(await this.bridge.call('list', { filters: { user_id: tenant, subject }, limit: 1000 }));
      if (listed.results.length === 0) return;
      for (const memory of listed.results) {
        if (deleted.has(memory.id)) throw new Mem0Failed('EVAL.MEM0_ERASE_STUCK', 'Mem0 still lists a memory it deleted');
        await this.bridge.call('delete', { memoryId: memory.id });
        deleted.add(memory.id);
      }
    }
  }

  async recall(probe: Probe, budgetTokens: number): Promise<Recalled> {
    const started = performance.now();
    const found = SearchResults.parse(
      await this.bridge.call('search', { query: probe.query, userId: probe.actor.tenant, limit: MEM0_SEARCH_LIMIT }),
    );
    this.endpoint.assertNoLlmCall();
    const items: ContextItem[] = [];
    const lines: string[] = [];
    for (const memory of found.results) {
      const text = memory.memory.replace(/\s*\n\s*/g, ' ');
      if (countTokens([...lines, text].join('\n')) > budgetTokens) break;
      lines.push(text);
      const step = memory.metadata.step;
      items.push({ text, mark: 'current', cites: typeof step === 'string' ? [step] : [] });
    }
    const context = lines.join('\n');
    return { context, items, tokens: countTokens(context), ms: performance.now() - started, audited: false };
  }

  async flags() {
    return [];
  }

  async instructionFlagged(): Promise<string[]> {
    return [];
  }

  async storageBytes(): Promise<number> {
    let total = 0;
    for (const path of await listFiles([this.dir])) total += (await stat(path).catch(() => ({ size: 0 }))).size;
    return total;
  }

  dataDir(): string {
    return this.dir;
  }

  /** Every file under the folder, concatenated (the byte scan reads `dataDir()`; this is for completeness). */
  async snapshot(): Promise<Buffer> {
    const files = await listFiles([this.dir]);
    return Buffer.concat(await Promise.all(files.map((path) => readFile(path).catch(() => Buffer.alloc(0)))));
  }

  /** The bridge's process id, for the spec that proves it is gone after `close`. */
  pid(): number | undefined {
    return this.bridge.pid;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.bridge.stop();
    await this.endpoint.close();
  }
}

const Answer = z.object({
  id: z.number().nullable(),
  ok: z.boolean(),
  result: z.unknown().optional(),
  error: z.object({ code: z.string(), type: z.string(), message: z.string() }).optional(),
});

/**
 * The Python bridge (scripts/mem0/bridge.py) as a child process speaking JSON lines; one request at a time is
 * enough for the evaluation, but ids make answers unambiguous. Error messages name the bridge's code and
 * exception type, never a memory's text (Mem0's own message stays in `detail`). `npm run bench:peers` drives its
 * own bridge (scripts/peers/bridge.py, same protocol) through `spawnScript`.
 */
export class Mem0Bridge {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private stderrTail = '';
  private exitedWith: string | undefined;
  readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly label = 'Mem0',
  ) {
    child.stderr!.on('data', (chunk: Buffer) => (this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-2000)));
    createInterface({ input: child.stdout! }).on('line', (line) => this.answer(line));
    // A write to a bridge that just died fails with EPIPE; its exit, below, rejects what was waiting.
    child.stdin!.on('error', () => undefined);
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitedWith = signal ? `signal ${signal}` : `code ${code}`;
        this.failAll(new Mem0Failed('EVAL.MEM0_BRIDGE_EXITED', `the ${this.label} bridge exited (${this.exitedWith})`));
        resolve();
      });
      child.once('error', (error) => {
        this.exitedWith = error.message;
        this.failAll(new Mem0Failed('EVAL.MEM0_BRIDGE_EXITED', `the ${this.label} bridge did not start: ${error.message}`));
        resolve();
      });
    });
  }

  static spawn(python: string, dir: string): Mem0Bridge {
    return Mem0Bridge.spawnScript(python, MEM0_BRIDGE, mem0Env(join(dir, 'home')), 'Mem0');
  }

  /** Another bridge speaking the same protocol: `script` run by `python` with `env` added; `label` names it in errors. */
  static spawnScript(python: string, script: string, env: Record<string, string>, label: string): Mem0Bridge {
    const child = spawn(python, [script], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    return new Mem0Bridge(child, label);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends one request and resolves with its result; rejects with Mem0Failed when the bridge answers an error. */
  call(op: string, args: Record<string, unknown>): Promise<unknown> {
    if (this.exitedWith)
      return Promise.reject(new Mem0Failed('EVAL.MEM0_BRIDGE_EXITED', `the ${this.label} bridge exited (${this.exitedWith})`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.stdin!.write(`${JSON.stringify({ id, op, ...args })}\n`);
    });
  }

  /** Asks the bridge to close its stores and exit; SIGKILL when it has not within 10 s. Idempotent. */
  async stop(): Promise<void> {
    if (!this.exitedWith) {
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      this.call('close', {}).catch(() => undefined);
      this.child.stdin!.end();
      await this.exited;
      clearTimeout(timer);
    }
  }

  /** The last lines the bridge wrote to stderr (library warnings; for diagnosing a failed start). */
  stderr(): string {
    return this.stderrTail;
  }

  private answer(line: string): void {
    let answer: z.infer<typeof Answer>;
    try {
      answer = Answer.parse(JSON.parse(line));
    } catch {
      return this.failAll(new Mem0Failed('EVAL.MEM0_PROTOCOL', `the ${this.label} bridge wrote a line that is not an answer`));
    }
    const waiting = answer.id === null ? undefined : this.pending.get(answer.id);
    if (!waiting) return;
    this.pending.delete(answer.id!);
    if (answer.ok) return waiting.resolve(answer.result);
    const error = answer.error ?? { code: 'MEM0_ERROR', type: 'unknown', message: '' };
    waiting.reject(
      Object.assign(new Mem0Failed(error.code, `${this.label} failed: ${error.code} (${error.type})`), { detail: error.message }),
    );
  }

  private failAll(error: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
  }
}

const EmbeddingsRequest = z.object({ input: z.union([z.string(), z.array(z.string()).min(1)]), dimensions: z.number().int().optional() });

export interface EmbeddingEndpoint {
  /** `http://127.0.0.1:port`; Mem0's base URLs are `<root>/query/v1` and `<root>/passage/v1`. */
  baseUrl: string;
  /** Requests to anything but the two embedding routes (an LLM call, which Mem0 must never make here). */
  llmCalls(): number;
  /** Throws Mem0Failed when Mem0 called an LLM on this endpoint. */
  assertNoLlmCall(): void;
  close(): Promise<void>;
}

/**
 * An OpenAI-compatible embedding endpoint on a loopback port, answering with `embedder`:
 * `POST /query/v1/embeddings` embeds its input as queries, `POST /passage/v1/embeddings` as documents, so the
 * embedder adds e5's `query: ` / `passage: ` prefixes exactly as it does for ELMA. Every other request is
 * counted as an LLM call and answered 500 (problem+json). Bodies are never logged or echoed.
 */
export function serveRoleEmbeddings(embedder: Embedder): Promise<EmbeddingEndpoint> {
  let llmCalls = 0;
  const routes: Record<string, EmbeddingRole> = { '/query/v1/embeddings': 'query', '/passage/v1/embeddings': 'document' };
  const server: Server = createServer((request, response) => {
    const role = request.method === 'POST' ? routes[request.url ?? ''] : undefined;
    if (!role) {
      llmCalls++;
      return problem(response, 500, 'EVAL.MEM0_LLM_CALLED', 'This endpoint serves embeddings only; the baseline runs without an LLM.');
    }
    void answerEmbeddings(request, response, embedder, role);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () =>
      resolve({
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        llmCalls: () => llmCalls,
        assertNoLlmCall() {
          if (llmCalls > 0) throw new Mem0Failed('EVAL.MEM0_LLM_CALLED', `Mem0 called an LLM ${llmCalls} time(s) with inference off`);
        },
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    );
  });
}

async function answerEmbeddings(
  request: IncomingMessage,
  response: ServerResponse,
  embedder: Embedder,
  role: EmbeddingRole,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  let body: z.infer<typeof EmbeddingsRequest>;
  try {
    body = EmbeddingsRequest.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
  } catch {
    return problem(response, 400, 'EVAL.EMBEDDINGS_BAD_REQUEST', 'The body must be {"input": string | string[]}.');
  }
  if (body.dimensions !== undefined && body.dimensions !== embedder.dimensions) {
    return problem(response, 400, 'EVAL.EMBEDDINGS_DIMENSIONS', `This model embeds in ${embedder.dimensions} dimensions.`);
  }
  try {
    const vectors = await embedder.embed(typeof body.input === 'string' ? [body.input] : body.input, role);
    const data = vectors.map((vector, index) => ({ object: 'embedding', index, embedding: Array.from(vector) }));
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ object: 'list', data, model: embedder.model, usage: { prompt_tokens: 0, total_tokens: 0 } }));
  } catch {
    problem(response, 502, 'EVAL.EMBEDDINGS_FAILED', 'The embedder failed.');
  }
}

function problem(response: ServerResponse, status: number, code: string, detail: string): void {
  response.writeHead(status, { 'content-type': 'application/problem+json' });
  response.end(JSON.stringify({ type: 'about:blank', title: detail, status, code, detail }));
}
