import { DomainError, FormatTooNew, IndexPartitionCorrupt, type FormatName } from '@elma/domain';

/**
 * What crosses between the index thread and the thread that calls it
 * (`ThreadedMemoryIndex`). Values travel by structured clone (records,
 * typed arrays, bigints); errors do not keep their classes that way, so they
 * travel as `WireError` and are made again on the calling side.
 */
export interface IndexCall {
  id: number;
  method: string;
  args: unknown[];
}

export type IndexReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WireError };

/** The index thread's first message: its index opened, or why it did not. */
export type IndexThreadReady = { ready: true } | { ready: false; error: WireError };

export interface WireError {
  name: string;
  message: string;
  stack?: string;
  /** A `DomainError`'s code, or a system or SQLite error's (`SQLITE_FULL`, `ENOSPC`). */
  code?: string;
  /** A `DomainError`'s details: ids, paths and kinds only, never content (see DomainError). */
  details?: Record<string, unknown>;
  domain: boolean;
}

export function toWire(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), domain: false };
  const code = (error as { code?: unknown }).code;
  return {
    name: error.name,
    message: error.message,
    ...(error.stack ? { stack: error.stack } : {}),
    ...(typeof code === 'string' ? { code } : {}),
    ...(error instanceof DomainError ? { details: error.details } : {}),
    domain: error instanceof DomainError,
  };
}

/** The domain errors callers tell apart by class (`instanceof`), made again from their details. */
const DOMAIN_CLASSES: Record<string, (details: Record<string, unknown>) => DomainError> = {
  IndexPartitionCorrupt: (details) => new IndexPartitionCorrupt(String(details.tenant)),
  FormatTooNew: (details) =>
    new FormatTooNew(details.format as FormatName, Number(details.found), String(details.where), Number(details.supported)),
};

const ERROR_CLASSES: Record<string, new (message: string) => Error> = { RangeError, TypeError };

/**
 * The error as the calling thread sees it: a domain error of the same class
 * (or a `DomainError` of the same code and name), any other error with its
 * name and code, which is what callers look at (e.g. `storageFullOf`). The
 * stack is the index thread's, where the error happened.
 */
export function fromWire(wire: WireError): Error {
  let error: Error;
  if (wire.domain) {
    const details = wire.details ?? {};
    error = DOMAIN_CLASSES[wire.name]?.(details) ?? new DomainError(wire.code ?? 'INDEX.FAILED', wire.message, details);
  } else {
    error = new (ERROR_CLASSES[wire.name] ?? Error)(wire.message);
    if (wire.code !== undefined) Object.assign(error, { code: wire.code });
  }
  error.name = wire.name;
  if (wire.stack) error.stack = wire.stack;
  return error;
}
