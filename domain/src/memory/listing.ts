import { z } from 'zod';
import { PageQuery } from '../shared/paging';
import { MemoryKind, Purpose, RECALLABLE_STATUSES, type MemoryRecord, type MemoryStatus } from './record';
import { SessionId } from './write';
import { ScopeList, ScopeSource, ScopeValue, occurredInOrder } from '../recall/schema';

const IsoDate = z.iso.datetime({ offset: true });

/** A query parameter that may be repeated: one value, or the values of each repetition (`?subjects=a&subjects=b`). */
const Repeated = <T extends z.ZodType>(item: T) => z.union([item.transform((value) => [value]), ScopeList(item)]);

/**
 * A source as a listing's query string names it: `system:channel`, split at
 * the last colon, either side empty for "any" (`crm:`, `:email`, `crm:email`).
 */
const SourceParam = z
  .string()
  .max(401)
  .regex(/:/, 'system:channel (either side may be empty)')
  .transform((value) => {
    const at = value.lastIndexOf(':');
    const [system, channel] = [value.slice(0, at), value.slice(at + 1)];
    return { ...(system !== '' ? { system } : {}), ...(channel !== '' ? { channel } : {}) };
  })
  .pipe(ScopeSource);

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
  subject: ScopeValue.optional(),
  kind: MemoryKind.optional(),
  status: ListableStatus.optional(),
  purpose: Purpose.optional(),
  /** Working memories of this session are listed too (the caller's own are, in any session). */
  session: SessionId.optional(),
  // The keys of a recall's `filter`, each repeatable (values OR, keys AND): `RecallFilter`.
  subjects: Repeated(ScopeValue).optional(),
  entities: Repeated(ScopeValue).optional(),
  projects: Repeated(ScopeValue).optional(),
  sessions: Repeated(ScopeValue).optional(),
  sources: Repeated(SourceParam)
    .optional()
    .describe('`system:channel`, either side empty for any (`crm:`, `:email`, `crm:email`); repeatable.'),
  occurredAfter: IsoDate.optional(),
  occurredBefore: IsoDate.optional(),
  kinds: Repeated(MemoryKind).optional(),
})
  .refine(...occurredInOrder)
  .refine((query) => query.kind === undefined || query.kinds === undefined, {
    message: 'give kind or kinds, not both',
    path: ['kinds'],
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
