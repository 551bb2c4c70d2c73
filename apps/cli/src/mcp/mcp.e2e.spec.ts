import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Elma } from '@elma/client';
import { roleTokens, startTestApp, type TestApp } from '../../../api/src/testing';
import { startMcpHttp } from './testing';

const main = join(import.meta.dirname, '..', 'main.ts');
const TOOLS = ['forget_request', 'get', 'recall', 'remember'];

let t: TestApp;
let tokens: Record<string, string>;
/** The projection has applied every write so far (recall sees them). */
const settled = async () => t.elma.runner.waitFor(await t.elma.log.headPosition());

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  tokens = await roleTokens(t, ['agent', 'dpo']);
  tokens.globex = await t.token({ tenant: 'globex', sub: 'agent-9' });
}, 120_000);
afterAll(async () => t?.close());

/** The environment `elma mcp` runs in: this one, pointed at the test's ELMA, with `token` or none. */
function env(token?: string): Record<string, string> {
  const { ELMA_TOKEN: _ignored, ...rest } = process.env;
  return { ...(rest as Record<string, string>), ELMA_URL: t.url, ...(token ? { ELMA_TOKEN: token } : {}) };
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}
const text = (result: CallToolResult) => result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

async function stdioClient(token?: string): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', main, 'mcp'],
    env: env(token),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'elma-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

describe('elma mcp over stdio (a real child process, the SDK client)', () => {
  let mcp: Client;
  let stderr: () => string;
  beforeAll(async () => ({ client: mcp, stderr } = await stdioClient(tokens.agent)), 60_000);
  afterAll(async () => mcp?.close());

  it('lists the four tools with their input schemas', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
    // Recall takes the API's filter; a filter the API would refuse is refused before any call.
    const recallTool = tools.find((tool) => tool.name === 'recall');
    expect(Object.keys((recallTool?.inputSchema.properties as { filter: { properties: object } }).filter.properties)).toEqual([
      'subjects',
      'entities',
      'projects',
      'sessions',
      'sources',
      'occurredAfter',
      'occurredBefore',
      'kinds',
    ]);
    const remember = tools.find((tool) => tool.name === 'remember');
    expect(remember?.inputSchema.required).toEqual(expect.arrayContaining(['subject', 'text']));
    expect(remember?.outputSchema).toBeDefined();
    expect(stderr()).toContain(`ELMA API at ${t.url}`);
  });

  it('remembers Chinese text, recalls it with its citation, and reads the memory', async () => {
    const remembered = await call(mcp, 'remember', { subject: 'cust-wang', text: '王先生说交付风险很高，希望下周确认发货日期。' });
    expect(remembered.isError, text(remembered)).toBeFalsy();
    const [event] = (remembered.structuredContent as { events: { id: string }[] }).events;
    expect(text(remembered)).toContain(event.id);
    await settled();

    const recalled = await call(mcp, 'recall', { query: '交付风险', purpose: 'support' });
    expect(recalled.isError, text(recalled)).toBeFalsy();
    expect(text(recalled)).toContain('王先生说交付风险很高');
    const { items, promptOrder } = recalled.structuredContent as {
      items: { id: string; rank: number; citation: { sourceEventIds: string[] } }[];
      promptOrder: string[];
    };
    expect(items.find((i) => i.id === `mem_ep_${event.id}`)?.citation.sourceEventIds).toEqual([event.id]);
    // The text opens with the context's numbers, best first.
    expect(items[0].rank).toBe(1);
    expect(text(recalled).startsWith(`Best first: [${promptOrder.indexOf(items[0].id) + 1}]`)).toBe(true);

    const got = await call(mcp, 'get', { id: `mem_ep_${event.id}` });
    expect(got.isError, text(got)).toBeFalsy();
    expect(got.structuredContent).toMatchObject({ id: `mem_ep_${event.id}`, kind: 'episodic', status: 'active' });
    expect(text(got)).toContain('王先生');
  });

  it("another tenant's memory is not found, and an agent may not ask for an erasure: tool errors naming the code", async () => {
    const globex = new Elma({ url: t.url, token: tokens.globex });
    const [theirs] = (await globex.remember({ subject: 'cust-g', text: 'Globex secret renewal terms' })).events;
    await settled();
    const got = await call(mcp, 'get', { id: `mem_ep_${theirs.id}` });
    expect(got.isError).toBe(true);
    expect(text(got)).toContain('MEMORY.NOT_FOUND');
    expect(text(got)).not.toContain('Globex secret');
    const forget = await call(mcp, 'forget_request', { subject: 'cust-wang', reason: 'subject_request' });
    expect(forget.isError).toBe(true);
    expect(text(forget)).toContain('AUTH.FORBIDDEN');
    expect(forget._meta?.['elma/problem']).toMatchObject({ status: 403, code: 'AUTH.FORBIDDEN' });
  });

  it('input the API would refuse is refused by the tool schema, and the server lives on', async () => {
    const refused = await call(mcp, 'recall', { query: '', purpose: 'support' });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/query/);
    for (const filter of [{ subjects: [] }, { sources: [{}] }, { unknown: ['x'] }]) {
      const scoped = await call(mcp, 'recall', { query: '交付风险', purpose: 'support', filter });
      expect(scoped.isError, JSON.stringify(filter)).toBe(true);
      expect(text(scoped)).toMatch(/filter/);
    }
    expect((await mcp.listTools()).tools).toHaveLength(4);
  });

  it('without ELMA_TOKEN every call is a tool error AUTH.UNAUTHENTICATED, not a crash', async () => {
    const { client, stderr: notes } = await stdioClient(undefined);
    try {
      const result = await call(client, 'recall', { query: '交付风险', purpose: 'support' });
      expect(result.isError).toBe(true);
      expect(text(result)).toContain('AUTH.UNAUTHENTICATED');
      expect((await client.listTools()).tools).toHaveLength(4);
      expect(notes()).toContain('no ELMA_TOKEN');
    } finally {
      await client.close();
    }
  });
});

describe('elma mcp pointed at an address where no ELMA listens', () => {
  it('says so on stderr at start, and each tool call is a tool error naming the address', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as { port: number };
    await new Promise((resolve) => closed.close(resolve));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', main, 'mcp'],
      env: { ...env(tokens.agent), ELMA_URL: `http://127.0.0.1:${port}` },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const client = new Client({ name: 'elma-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = await call(client, 'recall', { query: 'x', purpose: 'support' });
      expect(result.isError).toBe(true);
      expect(text(result)).toContain('CLIENT.UNREACHABLE');
      expect(text(result)).toContain(`http://127.0.0.1:${port}`);
      expect(stderr).toContain(`cannot reach the ELMA API at http://127.0.0.1:${port} (ECONNREFUSED)`);
    } finally {
      await client.close();
    }
  });
});

describe('elma mcp --http (a real child process on a real port, the SDK client)', () => {
  let stop: () => Promise<void>;
  let url: string;
  const open: Client[] = [];

  beforeAll(async () => ({ url, stop } = await startMcpHttp(env())), 60_000);
  afterAll(async () => {
    for (const client of open) await client.close().catch(() => undefined);
    await stop?.();
  });

  async function httpClient(token?: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
    });
    const client = new Client({ name: 'elma-test', version: '1.0.0' });
    await client.connect(transport);
    open.push(client);
    return { client, transport };
  }

  it("acts with each session's own token: an agent remembers, a dpo's erasure runs, another tenant's agent sees none of it", async () => {
    const { client: agent } = await httpClient(tokens.agent);
    const { client: dpo } = await httpClient(tokens.dpo);
    const { client: globex } = await httpClient(tokens.globex);
    expect((await agent.listTools()).tools.map((tool) => tool.name).sort()).toEqual(TOOLS);

    const remembered = await call(agent, 'remember', { subject: 'cust-http', text: '李女士的备用钥匙放在蓝色陶瓷青蛙下面' });
    expect(remembered.isError, text(remembered)).toBeFalsy();
    const [event] = (remembered.structuredContent as { events: { id: string }[] }).events;
    await settled();
    expect(text(await call(agent, 'get', { id: `mem_ep_${event.id}` }))).toContain('李女士');

    const hidden = await call(globex, 'get', { id: `mem_ep_${event.id}` });
    expect([hidden.isError, text(hidden).includes('MEMORY.NOT_FOUND')]).toEqual([true, true]);
    const recalled = await call(globex, 'recall', { query: '钥匙', purpose: 'support' });
    expect(text(recalled)).not.toContain('李女士');
    const refused = await call(globex, 'forget_request', { subject: 'cust-http', reason: 'subject_request' });
    expect([refused.isError, text(refused).includes('AUTH.FORBIDDEN')]).toEqual([true, true]);

    const forget = await call(dpo, 'forget_request', { subject: 'cust-http', reason: 'subject_request' });
    expect(forget.isError, text(forget)).toBeFalsy();
    const { requestId } = forget.structuredContent as { requestId: string };
    const done = await new Elma({ url: t.url, token: tokens.dpo }).waitForErasure(requestId);
    expect(done.status).toBe('completed');
    const gone = await call(agent, 'get', { id: `mem_ep_${event.id}` });
    expect([gone.isError, text(gone).includes('MEMORY.NOT_FOUND')]).toEqual([true, true]);
  });

  it('a session without a token, or with a forged one, gets tool errors naming the code', async () => {
    const { client: anonymous } = await httpClient(undefined);
    const none = await call(anonymous, 'recall', { query: 'x', purpose: 'support' });
    expect([none.isError, text(none).includes('AUTH.UNAUTHENTICATED')]).toEqual([true, true]);
    const forgedToken = `${tokens.dpo.slice(0, -4)}AAAA`;
    const { client: forged } = await httpClient(forgedToken);
    const bad = await call(forged, 'forget_request', { subject: 'cust-wang', reason: 'subject_request' });
    expect([bad.isError, text(bad).includes('AUTH.TOKEN_INVALID')]).toEqual([true, true]);
    expect(text(bad)).not.toContain(forgedToken.split('.')[1]);
  });

  it("a session id with another caller's token is an unknown session: nobody borrows a session's token", async () => {
    const { transport } = await httpClient(tokens.dpo);
    const sessionId = transport.sessionId!;
    const hijack = (token: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'mcp-session-id': sessionId,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'recall', arguments: { query: 'x', purpose: 'support' } },
        }),
      });
    const borrowed = await hijack(tokens.globex);
    expect(borrowed.status).toBe(404);
    expect(await borrowed.text()).toContain('Session not found');
    // The same request with the session's own token is served: the 404 above is the token check.
    const own = await hijack(tokens.dpo);
    expect(own.status).toBe(200);
  });

  it('bounds the sessions open at once: one more initialize is refused with 503 until a session ends', async () => {
    const small = await startMcpHttp(env(), ['--max-sessions', '1']);
    const connect = async () => {
      const transport = new StreamableHTTPClientTransport(new URL(small.url), {
        requestInit: { headers: { authorization: `Bearer ${tokens.agent}` } },
      });
      const client = new Client({ name: 'elma-test', version: '1.0.0' });
      await client.connect(transport);
      return { client, transport };
    };
    try {
      const first = await connect();
      await expect(connect()).rejects.toThrow(/Too many MCP sessions open/);
      // The client ends its session (HTTP DELETE), which frees its place.
      await first.transport.terminateSession();
      await first.client.close();
      const again = await connect();
      expect((await again.client.listTools()).tools).toHaveLength(4);
      await again.client.close();
    } finally {
      await small.stop();
    }
  });

  it('answers no other host than the loopback names it is bound to (DNS rebinding)', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(
        url,
        { method: 'POST', headers: { host: 'attacker.example', 'content-type': 'application/json' } },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', reject);
      request.end('{}');
    });
    expect(status).toBe(403);
  });
});
