import { z } from 'zod';

/**
 * A review flag (paper, section 5.6 'Security and poisoning defence'): a
 * write that looks like poisoning, raised for a person to look at. A flag is
 * advisory: it never changes a record (the conflict rules are what keep a
 * contradicting lower-trust fact out of the current answer). It holds ids,
 * counts and names of rules only, never a subject's id or any content: it
 * outlives the erasure of what it points at (docs/adr/0013-review-flags.md).
 */

export const ReviewFlagKind = z.enum(['write_burst', 'trust_shift', 'summary_divergence', 'trust_conflict']);
export type ReviewFlagKind = z.infer<typeof ReviewFlagKind>;

/**
 * Which detector raised a flag, within its kind:
 * - `source_burst`, `fact_burst` (write_burst): too many events from one source system, or facts about one
 *   entity and attribute, within the tenant's window;
 * - `source_tier_changed`, `fact_tier_flip` (trust_shift): a source system seen with another trust tier than
 *   before; a fact's current value taken over by a source of another tier that is not a registered authority;
 * - `unsupported_claims` (summary_divergence): numbers, dates or named values in a summary that none of its
 *   sources states;
 * - `lower_trust_contradiction` (trust_conflict): a fact that contradicts an established fact of a higher tier
 *   (it is superseded by `source_authority` as it arrives).
 */
export const ReviewFlagRule = z.enum([
  'source_burst',
  'fact_burst',
  'source_tier_changed',
  'fact_tier_flip',
  'unsupported_claims',
  'lower_trust_contradiction',
]);
export type ReviewFlagRule = z.infer<typeof ReviewFlagRule>;

export const ReviewFlagStatus = z.enum(['open', 'confirmed', 'dismissed']);
export type ReviewFlagStatus = z.infer<typeof ReviewFlagStatus>;

export const ReviewDecision = z.enum(['confirmed', 'dismissed']);
export type ReviewDecision = z.infer<typeof ReviewDecision>;

const IsoDate = z.iso.datetime({ offset: true });
// Bounded, as in the audit trail, so that an id field cannot quietly carry content.
const Id = z.string().min(1).max(256);
/** A source system's name as ingest takes it (`source.system`). */
const SourceSystem = z.string().min(1).max(100);

/** What a detector found; the flag's id is derived from `key` by the caller (deterministic: a replay raises nothing new). */
export const ReviewFlagDraft = z.strictObject({
  /** The flag's identity: the same finding always has the same key. Never stored. */
  key: z.string().min(1),
  kind: ReviewFlagKind,
  rule: ReviewFlagRule,
  /** The ingest events the flag is about (the suspect writes). */
  eventIds: z.array(Id).max(1000),
  /** The records involved: the suspect ones first, then what they contradicted or summarised. */
  recordIds: z.array(Id).max(1000),
  /** The source system, for the source detectors. */
  sourceSystem: SourceSystem.optional(),
  /** How many writes (or claims) the rule counted. */
  count: z.number().int().min(0),
  /** Transaction time of the write that raised it (the server's clock, not the client's). */
  raisedAt: IsoDate,
});
export type ReviewFlagDraft = z.infer<typeof ReviewFlagDraft>;

/** `ReviewFlagRaised`: a draft with its id, in `reviews-{tenant}`. */
export const ReviewFlagRaised = ReviewFlagDraft.omit({ key: true }).extend({ id: Id });
export type ReviewFlagRaised = z.infer<typeof ReviewFlagRaised>;

/** Bounded and free of control characters: a reviewer's note is kept with the flag, so it says why, not who. */
const Note = z
  .string()
  .min(1)
  .max(1000)
  .regex(/^[^\p{Cc}]*$/u, 'contains no control characters');

/** `POST /v1/review-flags/{id}/resolve`. */
export const ResolveReviewFlagRequest = z.strictObject({ decision: ReviewDecision, note: Note.optional() });
export type ResolveReviewFlagRequest = z.infer<typeof ResolveReviewFlagRequest>;

export const ReviewFlagResolution = z.object({ decision: ReviewDecision, by: Id, at: IsoDate, note: Note.optional() });
export type ReviewFlagResolution = z.infer<typeof ReviewFlagResolution>;

/** A flag as the API shows it. */
export const ReviewFlag = ReviewFlagRaised.extend({
  status: ReviewFlagStatus,
  resolution: ReviewFlagResolution.optional(),
});
export type ReviewFlag = z.infer<typeof ReviewFlag>;

/** `GET /v1/review-flags`: filters and a page (`cursor` is the opaque `nextCursor` of the page before). */
export const ReviewFlagQuery = z.strictObject({
  kind: ReviewFlagKind.optional(),
  status: ReviewFlagStatus.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'a cursor from a previous page')
    .optional(),
});
export type ReviewFlagQuery = z.infer<typeof ReviewFlagQuery>;

/** One page of flags, oldest first; `nextCursor` is absent on the last page. */
export interface ReviewFlagPage {
  items: ReviewFlag[];
  nextCursor?: string;
}

/**
 * The page of `flags` (in the order raised) after `query.cursor` that match
 * the filters. The cursor is the position of the last flag returned, so a
 * page never repeats or skips a flag raised meanwhile.
 */
export function pageOfFlags(flags: readonly ReviewFlag[], query: ReviewFlagQuery): ReviewFlagPage {
  const after = query.cursor === undefined ? -1 : Number(query.cursor);
  const items: ReviewFlag[] = [];
  let last = after;
  for (let i = after + 1; i < flags.length; i++) {
    const flag = flags[i];
    if ((query.kind && flag.kind !== query.kind) || (query.status && flag.status !== query.status)) continue;
    if (items.length === query.limit) return { items, nextCursor: String(last) };
    items.push(flag);
    last = i;
  }
  return { items };
}
