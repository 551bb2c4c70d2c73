/// <reference lib="dom" />

/** An RFC 9457 problem the API answered with, or the network failing before any answer. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly requestId?: string,
    /** Validation issues (path and message), when the API lists them. */
    readonly errors: { path?: unknown; message?: string }[] = [],
  ) {
    super(detail);
  }
}

const TOKEN_KEY = 'elma.console.token';

/**
 * The bearer token lives in this tab's sessionStorage only: gone when the tab closes, never in a URL, a cookie
 * or localStorage, and sent only as an Authorization header to this origin.
 */
export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  signIn: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: () => sessionStorage.removeItem(TOKEN_KEY),
};

export interface CallOptions {
  method?: string;
  json?: unknown;
  bytes?: ArrayBuffer;
  token?: string;
}

/** Calls the API on this origin; any answer that is not 2xx becomes an ApiProblem. */
export async function call(path: string, options: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
  const token = options.token ?? session.token();
  if (token) headers.authorization = `Bearer ${token}`;
  let body: BodyInit | undefined;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.bytes !== undefined) {
    headers['content-type'] = 'application/octet-stream';
    body = options.bytes;
  }
  let response: Response;
  try {
    // `omit`: the console authenticates with the header only; no cookie is ever sent or stored.
    response = await fetch(path, { method: options.method ?? 'GET', headers, body, credentials: 'omit', cache: 'no-store' });
  } catch {
    throw new ApiProblem(0, 'NETWORK', 'the ELMA API did not answer');
  }
  if (response.ok) return response;
  throw await problemOf(response);
}

export async function callJson<T>(path: string, options: CallOptions = {}): Promise<T> {
  return (await (await call(path, options)).json()) as T;
}

async function problemOf(response: Response): Promise<ApiProblem> {
  try {
    const problem = (await response.json()) as { code?: string; detail?: string; title?: string; requestId?: string; errors?: unknown };
    return new ApiProblem(
      response.status,
      problem.code ?? problem.title ?? `HTTP.${response.status}`,
      problem.detail ?? response.statusText,
      problem.requestId,
      Array.isArray(problem.errors) ? problem.errors : [],
    );
  } catch {
    return new ApiProblem(response.status, `HTTP.${response.status}`, response.statusText || 'unexpected answer');
  }
}
