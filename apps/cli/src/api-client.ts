/**
 * How every `elma` command that talks to a running ELMA finds it and calls it: one address rule, one token
 * rule, one message when nothing answers. Commands parse `API_OPTIONS` with their own, then `resolveApi`.
 */

export interface Output {
  write(chunk: string | Uint8Array): unknown;
  /** Set by Node on a terminal. */
  isTTY?: boolean;
}

export interface CommandIo {
  stdout: Output;
  stderr: Output;
  env: NodeJS.ProcessEnv;
}

export const processIo = (): CommandIo => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });

/** The options every API command takes (spread into its `parseArgs` options). */
export const API_OPTIONS = { url: { type: 'string' }, token: { type: 'string' } } as const;

/** The usage lines' note on where the API and the token come from. */
export const API_USAGE_NOTE =
  'The API: --url, else ELMA_URL, else http://127.0.0.1:$ELMA_PORT (default 8080). The token: --token, else ELMA_TOKEN.';

const DEFAULT_PORT = '8080';
const REQUEST_TIMEOUT_MS = 30_000;

export interface ApiTarget {
  /** Base URL without a trailing slash. */
  url: string;
  token: string | undefined;
}

/** `--url`, else `ELMA_URL`, else the local API on `ELMA_PORT` (as `npm start` in the same shell listens), else 8080. */
export function apiUrlOf(values: { url?: string }, env: NodeJS.ProcessEnv): string {
  const port = env.ELMA_PORT === undefined || env.ELMA_PORT === '' ? DEFAULT_PORT : env.ELMA_PORT;
  const url = values.url || env.ELMA_URL || `http://127.0.0.1:${port}`;
  return url.replace(/\/+$/, '');
}

export function resolveApi(values: { url?: string; token?: string }, env: NodeJS.ProcessEnv): ApiTarget {
  return { url: apiUrlOf(values, env), token: values.token || env.ELMA_TOKEN || undefined };
}

/**
 * Nothing answered at the API's address: refused, no such host, timed out. The message names the address
 * and how to change it; the CLI prints it alone (no stack) and exits 1.
 */
export class ApiUnreachable extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach the ELMA API at ${url} (${reason}): is elma running? set ELMA_URL or ELMA_PORT (or --url)`);
    this.name = 'ApiUnreachable';
  }
}

export interface ApiAnswer {
  status: number;
  contentType: string;
  bytes: Buffer;
  text: string;
  /** The body parsed as JSON, when it is JSON. */
  body: unknown;
}

export interface CallOptions {
  /** Sent as JSON. */
  body?: unknown;
  accept?: string;
}

/** One call to the API. Throws `ApiUnreachable` when the address does not answer; any HTTP answer is returned. */
export async function callApi(target: ApiTarget, method: string, path: string, options: CallOptions = {}): Promise<ApiAnswer> {
  const response = await send(target, method, path, options);
  let bytes: Buffer;
  try {
    bytes = Buffer.from(await response.arrayBuffer());
  } catch (error) {
    throw new ApiUnreachable(target.url, reasonOf(error));
  }
  const text = bytes.toString('utf8');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', bytes, text, body };
}

/** The raw response, for bodies read as a stream (an audit export). Throws `ApiUnreachable` like `callApi`. */
export async function send(target: ApiTarget, method: string, path: string, options: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  if (target.token) headers.authorization = `Bearer ${target.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.accept) headers.accept = options.accept;
  try {
    return await fetch(`${target.url}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    throw new ApiUnreachable(target.url, reasonOf(error));
  }
}

/** What went wrong on the wire, short: `ECONNREFUSED`, `ENOTFOUND`, `no answer within 30 s`. */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  // fetch reports network failures as "fetch failed" with the reason in `cause` (sometimes nested in an AggregateError).
  const cause = error.cause as (Error & { code?: string; errors?: (Error & { code?: string })[] }) | undefined;
  const code = cause?.code ?? cause?.errors?.[0]?.code;
  if (code) return code;
  return cause?.message ?? error.message;
}

/**
 * Prints an answer: a 2xx body (indented JSON) on stdout and 0, anything else as `HTTP <status>: <problem>` on
 * stderr and 1. The problem+json of a refusal carries its stable `code`.
 */
export function report(io: Pick<CommandIo, 'stdout' | 'stderr'>, answer: ApiAnswer): number {
  const shown = answer.body === undefined ? answer.text : JSON.stringify(answer.body, null, 2);
  if (answer.status >= 200 && answer.status < 300) {
    io.stdout.write(`${shown}\n`);
    return 0;
  }
  io.stderr.write(`HTTP ${answer.status}: ${shown}\n`);
  return 1;
}

/** A refusal on stderr (as `report` prints it); returns 1. */
export function refused(io: Pick<CommandIo, 'stderr'>, answer: ApiAnswer): number {
  const shown = answer.body === undefined ? answer.text : JSON.stringify(answer.body, null, 2);
  io.stderr.write(`HTTP ${answer.status}: ${shown}\n`);
  return 1;
}
