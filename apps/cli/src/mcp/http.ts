import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface McpHttpOptions {
  host: string;
  port: number;
  /** A fresh MCP server for one session (its tools read the session's token from the request). */
  serverForSession: () => McpServer;
  /** Sessions open at once; an initialize beyond it is refused with 503 until one closes or idles out. */
  maxSessions: number;
  /** A session unused this long is closed (its client initializes again). */
  idleMs: number;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  /** SHA-256 of the bearer token that opened the session (empty for none): every later request must carry the same. */
  tokenHash: Buffer;
  lastUsed: number;
}

/** Host names a loopback-bound server answers to: a page elsewhere cannot reach it by DNS rebinding. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * MCP over streamable HTTP at `/mcp`, one session per client. The caller's `Authorization: Bearer` token goes
 * to ELMA with each tool call of its session (ELMA checks it); a session is bound to the token that opened
 * it, so a session id alone, guessed or leaked, lets nobody act with someone else's token: a request whose
 * token differs is answered as for an unknown session.
 */
export async function serveMcpOverHttp(options: McpHttpOptions): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const sessions = new Map<string, Session>();
  const loopback = ['127.0.0.1', 'localhost', '::1'].includes(options.host);

  const handle = async (
    request: IncomingMessage & { auth?: { token: string; clientId: string; scopes: string[] } },
    response: ServerResponse,
  ) => {
    const path = new URL(request.url ?? '/', 'http://mcp').pathname;
    if (path !== '/mcp') return jsonRpcError(response, 404, 'Not found: the MCP endpoint is /mcp');
    if (loopback && !LOOPBACK_HOSTS.has(hostName(request.headers.host))) return jsonRpcError(response, 403, 'Forbidden host');
    const token = bearer(request.headers.authorization);
    const tokenHash = createHash('sha256')
      .update(token ?? '')
      .digest();
    // The SDK hands `auth` to tool calls as `extra.authInfo`.
    if (token !== undefined) request.auth = { token, clientId: 'mcp-client', scopes: [] };
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (!session || !timingSafeEqual(session.tokenHash, tokenHash)) return jsonRpcError(response, 404, 'Session not found');
      session.lastUsed = Date.now();
      return session.transport.handleRequest(request, response);
    }
    if (request.method !== 'POST') return jsonRpcError(response, 400, 'Bad request: no session (initialize first)');
    // Sessions cost memory and anyone may open one (a token is checked by ELMA per call), so they are bounded.
    if (sessions.size >= options.maxSessions)
      return jsonRpcError(response, 503, 'Too many MCP sessions open; retry later', { 'retry-after': '60' });
    // A new session: its transport answers an initialize request, and refuses anything else (400).
    const server = options.serverForSession();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, { transport, server, tokenHash, lastUsed: Date.now() }),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(request, response);
    if (!transport.sessionId) await server.close();
  };

  const sweep = setInterval(
    () => {
      const idleSince = Date.now() - options.idleMs;
      for (const [id, session] of sessions)
        if (session.lastUsed < idleSince) {
          sessions.delete(id);
          void session.server.close().catch(() => undefined);
        }
    },
    Math.min(options.idleMs, 60_000),
  );
  sweep.unref();

  const http = createServer((request, response) => {
    handle(request, response).catch(() => {
      // Nothing of the request in the answer or a log line: it may carry a token.
      if (!response.headersSent) jsonRpcError(response, 500, 'Internal error');
      else response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => resolve());
  });
  const { port } = http.address() as { port: number };
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${shownHost}:${port}/mcp`,
    server: http,
    async close() {
      clearInterval(sweep);
      for (const session of sessions.values()) await session.server.close();
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

/** The host name of a Host header, without its port (`[::1]:8080` → `[::1]`). */
function hostName(host: string | undefined): string {
  if (!host) return '';
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
}

function jsonRpcError(response: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  response
    .writeHead(status, { 'content-type': 'application/json', ...headers })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}
