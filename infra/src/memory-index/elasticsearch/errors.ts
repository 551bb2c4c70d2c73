import { errors } from '@elastic/elasticsearch';

/**
 * A failed Elasticsearch call, described by the operation, the index or
 * alias, the HTTP status and Elasticsearch's error type only. The client's
 * own errors carry the request body and the server's `reason`, both of which
 * can hold memory content (a mapping error previews the field's value), so
 * they are never passed on, not even as `cause`: erasure cannot reach a log
 * line. Infrastructure errors: callers retry them.
 */
export class ElasticsearchIndexError extends Error {
  readonly code = 'MEMORY_INDEX.ELASTICSEARCH_FAILED';

  constructor(
    message: string,
    readonly status?: number,
    readonly type?: string,
  ) {
    super(message);
    this.name = 'ElasticsearchIndexError';
  }

  static from(operation: string, error: unknown): ElasticsearchIndexError {
    if (error instanceof ElasticsearchIndexError) return error;
    if (error instanceof errors.ResponseError) {
      const status = error.meta.statusCode;
      const type = errorType(error.meta.body);
      return new ElasticsearchIndexError(`elasticsearch ${operation} failed: ${type ?? 'error'} (status ${status ?? '?'})`, status, type);
    }
    const name = error instanceof Error ? error.name : typeof error;
    return new ElasticsearchIndexError(`elasticsearch ${operation} failed: ${name}`);
  }
}

function errorType(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const error = (body as { error?: unknown }).error;
  if (typeof error === 'string') return undefined; // a plain-text reason, not a type
  return typeof error === 'object' && error !== null && typeof (error as { type?: unknown }).type === 'string'
    ? (error as { type: string }).type
    : undefined;
}

/** The index (or alias) does not exist. */
export function isIndexNotFound(error: unknown): boolean {
  return (
    error instanceof errors.ResponseError && error.meta.statusCode === 404 && errorType(error.meta.body) === 'index_not_found_exception'
  );
}

export function isAlreadyExists(error: unknown): boolean {
  return (
    error instanceof errors.ResponseError &&
    error.meta.statusCode === 400 &&
    errorType(error.meta.body) === 'resource_already_exists_exception'
  );
}

/** The connection URL as it may be shown: without user name or password. */
export function displayUrl(node: string): string {
  try {
    const url = new URL(node);
    url.username = '';
    url.password = '';
    return url.origin;
  } catch {
    return '(invalid URL)';
  }
}
