import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Elma } from '@elma/client';
import { ApiUnreachable, apiUrlOf, send } from '../api-client';
import { serveMcpOverHttp } from '../mcp/http';
import { createElmaMcpServer } from '../mcp/tools';

const USAGE = `usage: elma mcp [--url URL]                                   MCP over stdio, as the token in ELMA_TOKEN
       elma mcp --http [--port N] [--host H] [--max-sessions N] [--url URL]
                                                         MCP over streamable HTTP at /mcp, as each client's bearer token
                                                         (sessions: at most N open, default 1000; closed after 30 min unused)
Tools: remember, recall, get, forget_request, on ELMA's API at --url, ELMA_URL, or http://127.0.0.1:$ELMA_PORT (default 8080).
`;

/** The HTTP transport's port unless --port says otherwise. */
export const DEFAULT_MCP_PORT = 8091;
/** MCP sessions open at once over HTTP unless --max-sessions says otherwise. */
const DEFAULT_MAX_SESSIONS = 1000;
/** An HTTP session unused for this long is closed. */
const SESSION_IDLE_MS = 30 * 60_000;

interface Io {
  stderr: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
}

/**
 * `elma mcp`: ELMA as tools for an MCP client (an agent framework, a desktop assistant). Over stdio the tools
 * act with ELMA_TOKEN; over HTTP with the bearer token of each client's session. The tools are thin: each is
 * one call of @elma/client against the API, so the API's policies hold. Nothing but protocol goes to stdout
 * over stdio; notes go to stderr.
 */
export async function mcpCommand(argv: string[], io: Io = { stderr: process.stderr, env: process.env }): Promise<number | undefined> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        http: { type: 'boolean', default: false },
        port: { type: 'string' },
        host: { type: 'string', default: '127.0.0.1' },
        url: { type: 'string' },
        'max-sessions': { type: 'string' },
      },
    }));
  } catch (error) {
    io.stderr.write(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const url = apiUrlOf(values, io.env);
  const port = Number(values.port ?? DEFAULT_MCP_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    io.stderr.write(`elma mcp: --port must be a port number\n${USAGE}`);
    return 2;
  }
  const maxSessions = Number(values['max-sessions'] ?? DEFAULT_MAX_SESSIONS);
  if (!Number.isInteger(maxSessions) || maxSessions < 1) {
    io.stderr.write(`elma mcp: --max-sessions must be a positive whole number\n${USAGE}`);
    return 2;
  }
  await warnIfUnreachable(url, io);

  if (values.http) {
    const served = await serveMcpOverHttp({
      host: values.host,
      port,
      maxSessions,
      idleMs: SESSION_IDLE_MS,
      serverForSession: () => createElmaMcpServer((extra) => new Elma({ url, token: extra.authInfo?.token })),
    });
    io.stderr.write(`elma mcp: MCP over streamable HTTP at ${served.url}, ELMA API at ${url}\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await served.close();
    return 0;
  }

  const token = io.env.ELMA_TOKEN || undefined;
  if (!token) io.stderr.write('elma mcp: no ELMA_TOKEN: every tool call will be refused (AUTH.UNAUTHENTICATED)\n');
  const elma = new Elma({ url, token });
  const server = createElmaMcpServer(() => elma);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once('end', resolve);
  });
  await server.connect(transport);
  io.stderr.write(`elma mcp: MCP over stdio, ELMA API at ${url}\n`);
  await closed;
  await server.close();
  return 0;
}

/** A note on stderr when the API does not answer now (it may start later: the tools then say the same per call). */
async function warnIfUnreachable(url: string, io: Io): Promise<void> {
  try {
    await send({ url, token: undefined }, 'GET', '/health');
  } catch (error) {
    if (!(error instanceof ApiUnreachable)) throw error;
    io.stderr.write(`elma mcp: ${error.message}\n`);
  }
}
