import { CLIENT_CODES, clientProblem, ElmaError, isProblem } from './errors.js';

export interface RetryInfo {
  /** The attempt that failed (1 for the first). */
  attempt: number;
  /** How long the client waits before the next attempt. */
  delayMs: number;
  error: ElmaError;
}

export interface TransportOptions {
  url: string;
  token?: string;
  timeoutMs: number;
  retries: number;
  maxRetryDelayMs: number;
  fetch: typeof fetch;
  onRetry?: (info: RetryInfo) => void | Promise<void>;
}

export interface CallOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** What the answer is read as: JSON (default) or bytes (a PDF). */
  as?: 'json' | 'bytes';
}

/**
 * One HTTP exchange with ELMA: bearer token, JSON in and out, a timeout per attempt, problem+json turned into
 * `ElmaError`. Only idempotent calls (GET) are retried, and only on 503 with `Retry-After` (a server shedding
 * load, an engine restarting): a POST that got 503 may have been refused before or after its effect, so the
 * caller decides.
 */
export class Transport {
  readonly #base: URL;
  readonly #token: string | undefined;
  readonly #options: Omit<TransportOptions, 'url' | 'token'>;

  constructor({ url, token, ...options }: TransportOptions) {
    // A trailing slash, so that relative paths resolve under a base path (https://host/elma/ → /elma/v1/…).
    this.#base = new URL(url.endsWith('/') ? url : `${url}/`);
    this.#token = token;
    this.#options = options;
  }

  /** The server's origin (no credentials, no path), for messages. */
  get origin(): string {
    return this.#base.origin;
  }

  async call<T>(method: 'GET' | 'POST', path: string, options: CallOptions = {}): Promise<T> {
    const url = new URL(path.replace(/^\//, ''), this.#base);
    for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    const idempotent = method === 'GET';
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#once<T>(method, url, options);
      } catch (error) {
        const delayMs = retryDelayMs(error);
        if (!idempotent || delayMs === undefined || attempt > this.#options.retries || delayMs > this.#options.maxRetryDelayMs) throw error;
        await this.#options.onRetry?.({ attempt, delayMs, error: error as ElmaError });
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  async #once<T>(method: string, url: URL, options: CallOptions): Promise<T> {
    const headers: Record<string, string> = {
      accept: options.as === 'bytes' ? 'application/pdf, application/problem+json' : 'application/json',
    };
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const fail = (code: string, status: number, detail: string, extra: { retryAfterSeconds?: number; cause?: unknown } = {}) =>
      new ElmaError(clientProblem(code, status, detail), { method, url, ...extra });
    // One signal for the exchange and the body, so a server that stalls mid-answer also times out.
    const signal = AbortSignal.timeout(this.#options.timeoutMs);
    let response: Response;
    let bytes: Uint8Array;
    try {
      response = await this.#options.fetch(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal,
      });
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      if (signal.aborted) throw fail(CLIENT_CODES.timeout, 0, `no answer from ${url.origin} within ${this.#options.timeoutMs} ms`);
      throw fail(CLIENT_CODES.unreachable, 0, `cannot reach ELMA at ${url.origin} (${networkReason(error)})`, { cause: error });
    }
    const type = response.headers.get('content-type') ?? '';
    const retryAfterSeconds = parseRetryAfter(response.headers.get('retry-after'));
    if (response.ok && options.as === 'bytes') return bytes as T;
    const text = new TextDecoder().decode(bytes);
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (response.ok && /json/.test(type) && json !== undefined) return json as T;
    if (!response.ok && isProblem(json)) throw new ElmaError(json, { method, url, retryAfterSeconds });
    throw fail(
      CLIENT_CODES.unexpectedResponse,
      response.status,
      `HTTP ${response.status} with ${type || 'no content type'}, not ${response.ok ? 'JSON' : 'an RFC 9457 problem'}`,
      { retryAfterSeconds },
    );
  }
}

/** Milliseconds to wait before retrying after `error`, or undefined when it is not a 503 with Retry-After. */
function retryDelayMs(error: unknown): number | undefined {
  if (!(error instanceof ElmaError) || error.status !== 503 || error.retryAfterSeconds === undefined) return undefined;
  return error.retryAfterSeconds * 1000;
}

/** `Retry-After` as delay-seconds or an HTTP date (RFC 9110, section 10.2.3). */
function parseRetryAfter(header: string | null): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** The system's reason for a failed connection (ECONNREFUSED, ENOTFOUND, …), without anything of the request. */
function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } })?.cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message;
  return error instanceof Error ? error.message : 'unknown error';
}
