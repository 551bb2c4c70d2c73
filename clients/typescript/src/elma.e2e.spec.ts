import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleTokens, slowRequest, startTestApp, type TestApp } from '../../../apps/api/src/testing';
import { Elma, ElmaError, type RetryInfo } from './index';

let t: TestApp;
let tokens: Record<string, string>;
let agent: Elma;
const client = (token?: string, options: Partial<ConstructorParameters<typeof Elma>[0]> = {}) =>
  new Elma({ url: t.url, token, purpose: 'support', ...options });

/** The ElmaError a call fails with (the test fails if it succeeds or throws anything else). */
async function failure(call: Promise<unknown>): Promise<ElmaError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ElmaError);
  return error as ElmaError;
}

/** Everything an error shows a log or a console: message, JSON, inspect (with its cause). */
const shown = (error: ElmaError) => `${error.message} ${JSON.stringify(error)} ${inspect(error, { depth: 5 })}`;

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  tokens = await roleTokens(t, ['agent', 'dpo']);
  tokens.globex = await t.token({ tenant: 'globex', sub: 'agent-9' });
  agent = client(tokens.agent);
}, 120_000);
afterAll(async () => t?.close());

describe('remember, recall, get and feedback over real HTTP', () => {
  let wangEvent: string;
  const wang = {
    subject: 'cust-wang',
    occurredAt: '2026-11-25T09:30:00Z',
    text: '王先生说交付风险很高，希望下周确认发货日期。',
    source: { system: 'crm', externalId: 'msg-1001' },
  };

  beforeAll(async () => {
    const written = await agent.remember([
      wang,
      {
        subject: 'cust-acme',
        occurredAt: new Date('2026-11-26T14:00:00Z'),
        activity: 'ticket.updated',
        content: {
          text: 'ACME confirmed the contract renews in March; delivery risk is low.',
          fact: { entity: 'ACME', attribute: 'renewal_month', value: 'March' },
        },
        source: { system: 'helpdesk', externalId: 'T-88' },
      },
    ]);
    expect(written.events.map((e) => [e.subject, e.duplicate])).toEqual([
      ['cust-wang', false],
      ['cust-acme', false],
    ]);
    wangEvent = written.events[0].id;
  });

  it('recalls Chinese text it was given, with a citation of its event', async () => {
    const answer = await agent.recall('交付风险', { consistency: 'strong', budgetTokens: 300 });
    const item = answer.items.find((i) => i.text.includes('王先生'));
    expect(item?.citation.sourceEventIds).toEqual([wangEvent]);
    expect(answer.context).toContain('王先生说交付风险很高');
  });

  it('sending the same event again is a duplicate, not a second memory', async () => {
    const again = await agent.remember({ ...wang });
    expect(again.events).toEqual([expect.objectContaining({ id: wangEvent, duplicate: true })]);
  });

  it('reads a memory with its provenance, and records an explicit one that cites its event', async () => {
    await agent.recall('renews', { consistency: 'strong' });
    const episodic = await agent.get(`mem_ep_${wangEvent}`);
    expect(episodic).toMatchObject({ kind: 'episodic', status: 'active', content: { text: expect.stringContaining('王先生') } });
    expect(episodic.provenance.sourceEventIds).toEqual([wangEvent]);

    const explicit = await agent.remember({
      memory: { kind: 'semantic', text: '王先生希望下周确认发货日期', sourceEventIds: [wangEvent] },
    });
    expect(explicit.memory).toMatchObject({ kind: 'semantic', content: { text: '王先生希望下周确认发货日期' } });
    expect((await agent.get(explicit.memory.id)).provenance.sourceEventIds).toEqual([wangEvent]);
  });

  it('answers best first, ranked, with the context in prompt order', async () => {
    const answer = await agent.recall('交付风险 contract renewal', { consistency: 'strong', budgetTokens: 300 });
    expect(answer.items.map((item) => item.rank)).toEqual(answer.items.map((_, i) => i + 1));
    expect([...answer.promptOrder].sort()).toEqual(answer.items.map((item) => item.id).sort());
    expect(answer.items[0].reason.route).toMatch(/^(bm25|dense|both|neighbour|hop|expansion)$/);
  });

  it('sends the filter as the API takes it', async () => {
    const sent: unknown[] = [];
    const recording = client(tokens.agent, {
      fetch: (input, init) => {
        sent.push(JSON.parse(String(init?.body)));
        return fetch(input, init);
      },
    });
    const filter = {
      subjects: ['cust-wang'],
      sources: [{ system: 'crm' }],
      occurredAfter: '2026-01-01T00:00:00Z',
      kinds: ['episodic' as const],
    };
    // What the server answers is its own suite's matter (apps/api): here, what the client sent.
    await recording.recall('交付风险', { filter }).catch(() => undefined);
    expect(sent).toEqual([{ query: '交付风险', purpose: 'support', filter }]);
  });

  it('gives feedback on the memories of a recall it used', async () => {
    const answer = await agent.recall('contract renewal March', { consistency: 'strong' });
    expect(answer.items.length).toBeGreaterThan(0);
    expect(await agent.feedback(answer.recallId, [answer.items[0].id])).toEqual({ adopted: 1 });
  });
});

describe('errors carry the RFC 9457 problem', () => {
  it('403: a purpose the token does not carry', async () => {
    const error = await failure(agent.recall('交付风险', { purpose: 'marketing' }));
    expect(error).toMatchObject({ status: 403, code: 'RECALL.PURPOSE_NOT_PERMITTED', title: 'RECALL.PURPOSE_NOT_PERMITTED' });
    expect(error.requestId).toMatch(/\S/);
    expect(error.message).toContain('RECALL.PURPOSE_NOT_PERMITTED');
    expect(error.message).toContain('POST');
  });

  it("404: another tenant's memory is answered like an unknown one", async () => {
    const globex = client(tokens.globex);
    const [event] = (await globex.remember({ subject: 'cust-g', text: 'Globex renews in June' })).events;
    await globex.recall('renews', { consistency: 'strong' });
    expect((await globex.get(`mem_ep_${event.id}`)).kind).toBe('episodic');
    const theirs = await failure(agent.get(`mem_ep_${event.id}`));
    const unknown = await failure(agent.get('mem_ep_00000000-0000-4000-8000-000000000000'));
    expect([theirs.status, theirs.code]).toEqual([404, 'MEMORY.NOT_FOUND']);
    expect([unknown.status, unknown.code, unknown.detail.replace(/mem_\S+/, 'ID')]).toEqual([
      404,
      theirs.code,
      theirs.detail.replace(/mem_\S+/, 'ID'),
    ]);
  });

  it('422: a body the API refuses names each failing field, in Chinese as in English', async () => {
    const error = await failure(agent.remember({ subject: '王先生', text: '没有时间', occurredAt: 'yesterday' }));
    expect([error.status, error.code]).toEqual([422, 'REQUEST.VALIDATION_FAILED']);
    expect(error.problem.errors).toEqual([expect.objectContaining({ path: 'occurredAt' })]);
  });

  it('401 without a token, and with a forged one, never showing the token', async () => {
    const missing = await failure(client(undefined).recall('交付风险'));
    expect([missing.status, missing.code]).toEqual([401, 'AUTH.UNAUTHENTICATED']);
    const forged = `${tokens.agent.slice(0, -4)}AAAA`;
    const bad = await failure(client(forged).get('mem_x'));
    expect([bad.status, bad.code]).toEqual([401, 'AUTH.TOKEN_INVALID']);
    expect(shown(bad)).not.toContain(forged);
    expect(shown(bad)).not.toContain(forged.split('.')[1]);
    expect(inspect(client(forged), { depth: 5 })).not.toContain(forged.split('.')[1]);
  });

  it('an address nobody listens on: CLIENT.UNREACHABLE naming the address, not the token or the query', async () => {
    const closed = await listening(createTcpServer());
    const port = closed.port;
    await closed.close();
    const error = await failure(
      new Elma({ url: `http://127.0.0.1:${port}`, token: tokens.agent }).get('mem_x', { purpose: 'cust-wang-secret' }),
    );
    expect([error.status, error.code]).toEqual([0, 'CLIENT.UNREACHABLE']);
    expect(error.message).toContain(`http://127.0.0.1:${port}`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(shown(error)).not.toContain(tokens.agent.split('.')[1]);
    expect(error.message).not.toContain('cust-wang-secret');
  });

  it('a server that never answers: CLIENT.TIMEOUT after the timeout', async () => {
    const sockets: Socket[] = [];
    const silent = await listening(createTcpServer((socket) => void sockets.push(socket)));
    try {
      const error = await failure(new Elma({ url: `http://127.0.0.1:${silent.port}`, timeoutMs: 200 }).get('mem_x'));
      expect([error.status, error.code]).toEqual([0, 'CLIENT.TIMEOUT']);
      expect(error.message).toContain('200 ms');
    } finally {
      sockets.forEach((s) => s.destroy());
      await silent.close();
    }
  });

  it('an answer that is not a problem (a proxy page): CLIENT.UNEXPECTED_RESPONSE with its status', async () => {
    const proxy = await listening(
      createHttpServer((_request, response) => void response.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>')),
    );
    try {
      const error = await failure(new Elma({ url: `http://127.0.0.1:${proxy.port}` }).recall('x'));
      expect([error.status, error.code]).toEqual([502, 'CLIENT.UNEXPECTED_RESPONSE']);
    } finally {
      await proxy.close();
    }
  });
});

describe('retries: idempotent calls only, on 503 with Retry-After', () => {
  let busy: TestApp;
  beforeAll(async () => {
    // One request of a class at a time and no queue: a second one is shed at once with 503 and Retry-After: 1.
    busy = await startTestApp({ env: { ELMA_MAX_INFLIGHT: '1', ELMA_MAX_QUEUE: '0', ELMA_MAX_QUEUE_WAIT_MS: '0' } });
  });
  afterAll(async () => busy?.close());

  /**
   * A request whose body stops after its first byte, once it holds its class's one slot: a probe of the same class
   * is then shed (503). A held request that arrived while the slot was still busy (the previous test's last call
   * finishing) is itself shed at once and holds nothing: then another one is sent.
   */
  async function holdSlot(token: string, path: string, body: unknown, probe: { method: string; path: string }) {
    for (let attempt = 0; attempt < 20; attempt++) {
      const held = slowRequest(busy.url, token, path, body);
      for (let i = 0; i < 250 && !held.answered(); i++) {
        const answer = await fetch(`${busy.url}${probe.path}`, {
          method: probe.method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: probe.method === 'POST' ? '{}' : undefined,
        });
        if (answer.status === 503 && !held.answered()) return held;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await held.finish().catch(() => undefined);
    }
    throw new Error(`no request to ${path} ever held its slot`);
  }

  it('a GET shed under load is retried after Retry-After and then answered', async () => {
    const token = await busy.token();
    const held = await holdSlot(
      token,
      '/v1/memories',
      { content: { text: 'x' }, sourceEventIds: [] },
      { method: 'GET', path: '/v1/memories/probe' },
    );
    const retries: RetryInfo[] = [];
    const elma = new Elma({
      url: busy.url,
      token,
      onRetry: async (info) => {
        retries.push(info);
        // The slot is freed before the retry: the retry is admitted, whatever the timing.
        await held.finish();
      },
    });
    const error = await failure(elma.get('mem_ep_00000000-0000-4000-8000-000000000000'));
    expect([error.status, error.code]).toEqual([404, 'MEMORY.NOT_FOUND']);
    expect(retries.map((r) => [r.attempt, r.delayMs, r.error.code])).toEqual([[1, 1000, 'SERVER.OVERLOADED']]);
  });

  it('a POST shed under load is not retried: the caller gets the 503 and its Retry-After', async () => {
    const token = await busy.token();
    const held = await holdSlot(token, '/v1/recall', { query: 'x', purpose: 'support' }, { method: 'POST', path: '/v1/recall' });
    const retries: RetryInfo[] = [];
    try {
      const error = await failure(
        new Elma({ url: busy.url, token, onRetry: (info) => void retries.push(info) }).recall('x', { purpose: 'support' }),
      );
      expect([error.status, error.code, error.retryAfterSeconds]).toEqual([503, 'SERVER.OVERLOADED', 1]);
      expect(retries).toEqual([]);
    } finally {
      await held.finish();
    }
  });
});

describe('erasure of a data subject', () => {
  it('is requested, followed to completion, and certified; the memory is gone after it', async () => {
    const [event] = (await agent.remember({ subject: 'cust-erase', text: '李女士的备用钥匙放在蓝色陶瓷青蛙下面' })).events;
    await agent.recall('钥匙', { consistency: 'strong' });
    const dpo = client(tokens.dpo);
    const requested = await dpo.requestErasure({ subject: 'cust-erase', reason: 'subject_request' });
    expect(requested.requestId).toMatch(/^era_/);
    const done = await dpo.waitForErasure(requested.requestId);
    expect(done).toMatchObject({ status: 'completed', certificateAvailable: true });
    expect((await dpo.erasure(requested.requestId)).closureSize).toBeGreaterThanOrEqual(1);
    const certificate = await dpo.certificate(requested.requestId);
    expect(certificate).toMatchObject({ certificate: expect.objectContaining({ requestId: requested.requestId, tenant: 'acme' }) });
    expect(new TextDecoder().decode((await dpo.certificatePdf(requested.requestId)).slice(0, 5))).toBe('%PDF-');
    expect((await failure(agent.get(`mem_ep_${event.id}`))).code).toBe('MEMORY.NOT_FOUND');
  });

  it("is refused to an agent without the role (403), and another tenant's request is not found (404)", async () => {
    const refused = await failure(agent.requestErasure({ subject: 'cust-wang', reason: 'subject_request' }));
    expect([refused.status, refused.code]).toEqual([403, 'AUTH.FORBIDDEN']);
    const requested = await client(tokens.dpo).requestErasure({
      scope: { type: 'subject', subject: 'nobody-here' },
      reason: 'subject_request',
    });
    const globexDpo = client(await t.token({ tenant: 'globex', sub: 'dpo-9', roles: ['dpo'], clearance: 'restricted' }));
    const hidden = await failure(globexDpo.erasure(requested.requestId));
    expect([hidden.status, hidden.code]).toEqual([404, 'ERASURE.NOT_FOUND']);
  });
});

describe('listing', () => {
  it('pages through the visible memories of a subject with an async iterator, and not those of another tenant', async () => {
    const written = await agent.remember(Array.from({ length: 5 }, (_, i) => ({ subject: 'cust-list', text: `列表第${i}条 note ${i}` })));
    await agent.recall('列表', { consistency: 'strong' });
    await client(tokens.globex).remember({ subject: 'cust-list', text: 'globex 列表' });
    const pages = [];
    for await (const page of agent.list({ subject: 'cust-list', kind: 'episodic', limit: 2 })) pages.push(page);
    expect(pages.map((p) => p.items.length)).toEqual([2, 2, 1]);
    expect(pages.at(-1)?.nextCursor).toBeNull();
    const ids = pages.flatMap((p) => p.items.map((m) => m.id)).sort();
    expect(ids).toEqual(written.events.map((e) => `mem_ep_${e.id}`).sort());
  });

  it('a forged cursor is a 400 problem with a stable code', async () => {
    const pages = agent.list({ cursor: 'not-a-cursor' })[Symbol.asyncIterator]();
    const error = await failure(pages.next());
    expect(error.status).toBe(400);
    expect(error.code).toMatch(/^[A-Z_]+\.[A-Z_]+$/);
  });

  it("lists a memory's versions, and 404 for another tenant's", async () => {
    const [event] = (await agent.remember({ subject: 'cust-v', text: '版本 history' })).events;
    await agent.recall('版本', { consistency: 'strong' });
    expect((await agent.versions(`mem_ep_${event.id}`)).items.map((m) => m.id)).toEqual([`mem_ep_${event.id}`]);
    expect((await failure(client(tokens.globex).versions(`mem_ep_${event.id}`))).status).toBe(404);
  });

  it('lists the erasures to the dpo, page by page', async () => {
    const dpo = client(tokens.dpo);
    const requested = await dpo.requestErasure({ subject: 'cust-nobody', reason: 'subject_request' });
    const seen: string[] = [];
    for await (const page of dpo.erasures({ limit: 1 })) seen.push(...page.items.map((e) => e.requestId));
    expect(seen).toContain(requested.requestId);
  });
});

/** A server listening on a free port of 127.0.0.1. */
async function listening(server: Server | TcpServer): Promise<{ port: number; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
