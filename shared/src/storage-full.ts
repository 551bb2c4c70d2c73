import { DomainError } from '@elma/domain';

/**
 * A write found no space left on the volume that holds ELMA's data. Nothing
 * of the failed write was kept (SQLite rolls the transaction back); a request
 * made of several writes may have kept the earlier ones, which are
 * idempotent, so the same request retried once space is freed completes it.
 * Nothing needs a restart.
 */
export class StorageFull extends DomainError {
  constructor() {
    super(
      'STORAGE.FULL',
      'the data volume is full: the request was not completed; retry it (retries are safe) once the operator has freed space',
    );
  }
}

/**
 * Codes under which "no space left" reaches us: SQLite's own (better-sqlite3
 * does not expose the system errno behind an SQLITE_IOERR, and SQLite's unix
 * layer already turns a short write with ENOSPC into SQLITE_FULL), Node's
 * system errors from fs writes, and a disk quota, which looks the same to
 * the operator.
 */
const FULL_CODES = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT']);

/**
 * The `StorageFull` behind an error from any adapter, or undefined. Follows
 * `cause` links, so a wrapper that kept the original error is recognised
 * too. Pure: it looks at codes only, never at the disk.
 */
export function storageFullOf(error: unknown): StorageFull | undefined {
  for (let current = error, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    if (current instanceof StorageFull) return current;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && FULL_CODES.has(code)) return new StorageFull();
  }
  return undefined;
}
