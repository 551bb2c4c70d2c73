import { z } from 'zod';
import { PageQuery } from '../shared/paging';
import { MemoryKind, Purpose, RECALLABLE_STATUSES, type MemoryRecord, type MemoryStatus } from './record';
import { SessionId } from './write';

/**
 * Statuses a listing can ask for: those a read by id can return. Candidates,
 * expired, deleted and purged records are nobody's to read, so asking for
 * them is refused rather than answered with an empty page.
 */
export const ListableStatus = z.enum(['active', 'disputed', 'superseded']);
export type ListableStatus = z.infer<typeof ListableStatus>;

/** What a listing shows without `status`: the records recall can return. */
export const DEFAULT_LISTED_STATUSES: readonly MemoryStatus[] = RECALLABLE_STATUSES;

/**
 * `GET /v1/memories`: filters, the purpose of the read (any of the token's by
 * default), a working memory's session, and a page.
 */
export const MemoryListQuery = PageQuery.extend({
  subject: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[^\p{Cc}]+$/u, 'contains no control characters')
    .optional(),
  kind: MemoryKind.optional(),
  status: ListableStatus.optional(),
  purpose: Purpose.optional(),
  /** Working memories of this session are listed too (the caller's own are, in any session). */
  session: SessionId.optional(),
});
export type MemoryListQuery = z.infer<typeof MemoryListQuery>;

/** `GET /v1/memories/{id}/versions`: the purpose of the read and a working memory's session, as for a read by id. */
export const MemoryVersionsQuery = z.strictObject({
  purpose: Purpose.optional(),
  session: SessionId.optional(),
});
export type MemoryVersionsQuery = z.infer<typeof MemoryVersionsQuery>;

/**
 * Where a listing is: just after this record in listing order. Records are
 * listed by the time they were first recorded, then by id; a record keeps
 * its place when new versions of it are written, so paging never repeats or
 * skips a record that changes meanwhile.
 */
export const ListPosition = z.strictObject({ recordedAt: z.iso.datetime({ offset: true }), id: z.string().min(1) });
export type ListPosition = z.infer<typeof ListPosition>;

export const listPositionOf = (record: Pick<MemoryRecord, 'recordedAt' | 'id'>): ListPosition => ({
  recordedAt: new Date(record.recordedAt).toISOString(),
  id: record.id,
});

/**
 * Listing order: first recorded first, ties by id (compared as the engines
 * compare keywords: by code unit for the ASCII ids ELMA makes).
 */
export function compareListed(a: ListPosition, b: ListPosition): number {
  const at = Date.parse(a.recordedAt) - Date.parse(b.recordedAt);
  if (at !== 0) return at;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
