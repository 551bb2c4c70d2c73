import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, chatEvent, startTestApp, type TestApp } from './testing';

/**
 * What a recall answer says about its items, over HTTP: best first, each
 * with its rank, what made its score and why it was a candidate; the
 * context keeps the prompt order, which `promptOrder` spells out.
 */
type Item = {
  id: string;
  rank: number;
  text: string;
  score: number;
  utility: number;
  scores: { bm25?: number; dense?: number; smoothing?: number; hop?: number };
  reason: { route: string; neighbourOf?: string; fromEntity?: string; hop?: number };
};
type Answer = { items: Item[]; promptOrder: string[]; context: string };

let t: TestApp;
let token: string;
const call = (method: string, path: string, body?: unknown) => callApi(t.url, token, method, path, body);

async function recall(query: string, options: Record<string, unknown> = {}): Promise<Answer> {
  const response = await call('POST', '/v1/recall', { query, purpose: 'support', consistency: 'strong', budgetTokens: 300, ...options });
  expect(response.status, response.text).toBe(200);
  return response.body;
}

async function ingest(events: unknown[]): Promise<string[]> {
  const response = await call('POST', '/v1/events', { events });
  expect(response.status, response.text).toBe(202);
  return (response.body.events as { id: string }[]).map((e) => e.id);
}

/** The shape every answer keeps, whatever its items. */
function expectWellFormed(answer: Answer) {
  const { items, promptOrder, context } = answer;
  expect(items.map((item) => item.rank)).toEqual(items.map((_, i) => i + 1));
  // Best first: by the utility each item was packed with.
  items.slice(1).forEach((item, i) => expect(item.utility).toBeLessThanOrEqual(items[i].utility));
  expect([...promptOrder].sort()).toEqual(items.map((item) => item.id).sort());
  expect(new Set(promptOrder).size).toBe(promptOrder.length);
  const byId = new Map(items.map((item) => [item.id, item]));
  let from = 0;
  promptOrder.forEach((id, i) => {
    const at = context.indexOf(`[${i + 1}] ${byId.get(id)!.text}`, from);
    expect(at, `[${i + 1}] in prompt order`).toBeGreaterThanOrEqual(from);
    from = at + 1;
  });
  for (const item of items) {
    expect(['bm25', 'dense', 'both', 'neighbour', 'hop', 'expansion']).toContain(item.reason.route);
    // A reason names only a memory of the answer itself.
    if (item.reason.neighbourOf !== undefined) expect(byId.has(item.reason.neighbourOf)).toBe(true);
    if (item.reason.route !== 'hop') {
      // The parts make the score: the routes' contributions plus the smoothing lift.
      const { bm25 = 0, dense = 0, smoothing = 0 } = item.scores;
      expect(bm25 + dense + smoothing).toBeCloseTo(item.score, 9);
    }
  }
}

beforeAll(async () => {
  t = await startTestApp();
  token = await t.token();
});
afterAll(async () => t?.close());

/**
 * An embedding model whose cosines sit in a narrow band, as e5's do (0.75-0.9 for any two texts of a
 * tenant): a real HTTP server speaking /v1/embeddings, each text's vector [1, then eight small
 * components drawn from its hash]. Every memory is then a dense hit of every query, related or not.
 */
async function narrowBandEmbeddings(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      // A request the client gave up on (its deadline passed under load) may arrive cut short: answered as an API would.
      let body: { model: string; input: string[] };
      try {
        body = JSON.parse(raw) as { model: string; input: string[] };
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"invalid JSON"}}');
        return;
      }
      const { model, input } = body;
      const data = input.map((text, index) => {
        const hash = createHash('sha256').update(text).digest();
        return {
          object: 'embedding',
          index,
          embedding: [1, ...[...hash.subarray(0, DIMENSIONS - 1)].map((b) => ((b / 255) * 2 - 1) * 0.3)],
        };
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', model, data }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
const DIMENSIONS = 8;

describe("the README's example, with a model whose cosines sit in a narrow band", () => {
  let model: Awaited<ReturnType<typeof narrowBandEmbeddings>>;
  let app: TestApp;
  let agent: string;

  beforeAll(async () => {
    model = await narrowBandEmbeddings();
    app = await startTestApp({
      env: {
        ELMA_EMBEDDER: 'openai-compatible',
        ELMA_EMBEDDING_URL: model.url,
        ELMA_EMBEDDING_MODEL: 'e5-small@v2',
        ELMA_EMBEDDING_DIMENSIONS: String(DIMENSIONS),
      },
    });
    agent = await app.token();
  });
  afterAll(async () => {
    await app?.close();
    await model?.close();
  });

  it('puts the message about delivery risk first for 交付风险, not the short fact about ACME that packing took first', async () => {
    // The README's walkthrough: a Chinese chat message and an English fact from the helpdesk.
    await callApi(app.url, agent, 'POST', '/v1/events', {
      events: [
        {
          subject: 'cust-wang',
          occurredAt: '2026-11-25T09:30:00Z',
          activity: 'chat.message',
          content: { text: '王先生说交付风险很高，希望下周确认发货日期。' },
          source: { system: 'crm', externalId: 'msg-1001', channel: 'chat' },
          purposes: ['support'],
        },
        {
          subject: 'cust-acme',
          occurredAt: '2026-11-26T14:00:00Z',
          activity: 'ticket.note',
          content: {
            text: 'ACME confirmed the contract renews in March.',
            fact: { entity: 'ACME', attribute: 'renewal_month', value: 'March' },
          },
          source: { system: 'helpdesk', externalId: 'T-88', channel: 'ticket' },
          purposes: ['support'],
        },
      ],
    });
    await embedded(app);
    const response = await callApi(app.url, agent, 'POST', '/v1/recall', {
      query: '交付风险',
      purpose: 'support',
      consistency: 'strong',
      budgetTokens: 300,
    });
    expect(response.status, response.text).toBe(200);
    const answer: Answer = response.body;
    // Every memory came back: the dense route finds them all, the fact about ACME among them.
    expectWellFormed(answer);
    expect(answer.items.map((item) => item.text)).toContain('ACME renewal_month: March');
    // Packing took the short fact first (gain per token) and made the longer message look like a repeat of
    // it; best first, the message the query is about comes first, found by both routes.
    expect(answer.items[0]).toMatchObject({
      rank: 1,
      text: '王先生说交付风险很高，希望下周确认发货日期。',
      reason: { route: 'both' },
      scores: { bm25: expect.any(Number), dense: expect.any(Number) },
    });
    const fact = answer.items.find((item) => item.text === 'ACME renewal_month: March')!;
    expect(fact).toMatchObject({ reason: { route: 'dense' }, scores: { dense: fact.score } });
    expect(fact.rank).toBeGreaterThan(1);
  });
});

/** Waits until the embedding stage has given every memory its vector (the dense route finds it then). */
async function embedded(app: TestApp) {
  await app.elma.runner.waitFor(await app.elma.log.headPosition());
  for (let i = 0; i < 200; i++) {
    const health = await fetch(`${app.url}/health`).then(
      (r) => r.json() as Promise<{ engines: { embeddings: { detail: { pending: number } } } }>,
    );
    if (health.engines.embeddings.detail.pending === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the embedding stage did not catch up');
}

describe('a recall answer, best first', () => {
  it('says whose neighbour a turn is that joined by smoothing, sharing no word with the query', async () => {
    const turn = (text: string, minute: number) => ({
      subject: 'cust-rotterdam',
      occurredAt: `2026-11-20T10:0${minute}:00Z`,
      activity: 'chat.turn',
      content: { text },
      source: { system: 'crm', channel: 'chat' },
      purposes: ['support'],
      session: 'chat-warehouse',
    });
    const [question, reply] = await ingest([turn('Which warehouse ships the Rotterdam orders?', 0), turn('Tilburg, since the move.', 1)]);
    const answer = await recall('Rotterdam warehouse orders');
    expectWellFormed(answer);
    const asked = answer.items.find((item) => item.id === `mem_ep_${question}`)!;
    const answered = answer.items.find((item) => item.id === `mem_ep_${reply}`)!;
    expect(asked.reason).toEqual({ route: 'bm25' });
    expect(answered.reason).toEqual({ route: 'neighbour', neighbourOf: asked.id });
    // Its whole score is lent by its conversation: the share of the question's that smoothing lent it (and the
    // conversation lift's); no route found it.
    expect(answered.scores).toEqual({ smoothing: answered.score });
    expect(answered.score).toBeGreaterThanOrEqual(asked.scores.bm25! / 2 - 1e-9);
  });

  it('says from which entity and how many hops out an edge was reached', async () => {
    const [sourceId] = await ingest([chatEvent('org-chart', 'Org chart sync')]);
    const edge = async (text: string, from: [string, string], relation: string, to: [string, string]) => {
      const response = await call('POST', '/v1/memories', {
        kind: 'relational',
        content: { text, relation: { from: { type: from[0], id: from[1] }, relation, to: { type: to[0], id: to[1] } } },
        sourceEventIds: [sourceId],
        purposes: ['support'],
      });
      expect(response.status, response.text).toBe(201);
    };
    await edge('Li Wei approves project Apollo.', ['person', 'li-wei'], 'approves', ['project', 'apollo']);
    // In Chinese, so that no word of the question finds it: only the edge's end links it.
    await edge('财务团队负责阿波罗项目。', ['team', 'finance'], 'owns', ['project', 'apollo']);
    const answer = await recall('who approves project Apollo', { hops: 1, budgetTokens: 2000 });
    expectWellFormed(answer);
    const reached = answer.items.find((item) => item.text === '财务团队负责阿波罗项目。')!;
    expect(reached.reason).toEqual({ route: 'hop', hop: 1, fromEntity: 'apollo' });
    expect(reached.scores).toEqual({ hop: reached.score });
    expect(answer.items.find((item) => item.text === 'Li Wei approves project Apollo.')!.reason.route).toBe('bm25');
  });

  it('answers the same over GraphQL', async () => {
    const response = await call('POST', '/graphql', {
      query: `query($input: RecallInput!) { recall(input: $input) {
        items { id rank text score utility scores { bm25 dense smoothing hop } reason { route neighbourOf fromEntity hop } }
        promptOrder context } }`,
      variables: { input: { query: 'Rotterdam warehouse orders', purpose: 'support', budgetTokens: 300 } },
    });
    expect(response.body.errors, response.text).toBeUndefined();
    const answer = response.body.data.recall;
    const rest = await recall('Rotterdam warehouse orders');
    expect(answer.items.map((item: Item) => [item.id, item.rank, item.reason.route])).toEqual(
      rest.items.map((item) => [item.id, item.rank, item.reason.route]),
    );
    expect(answer.promptOrder).toEqual(rest.promptOrder);
    expect(answer.items[0].scores.bm25).toBeCloseTo(rest.items[0].scores.bm25!, 12);
    // A part that played no part is null; a neighbour names its hit.
    expect(answer.items.find((item: Item) => item.reason.route === 'neighbour')).toMatchObject({
      scores: { bm25: null, dense: null, hop: null },
      reason: { neighbourOf: answer.items[0].id, fromEntity: null, hop: null },
    });
  });
});
