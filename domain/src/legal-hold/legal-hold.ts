import { z } from 'zod';
import type { ReadExclusions } from '../policy/clause';
import { exclusionKeys, restrictionKeys, type LineageTarget } from '../memory/lineage';

const Ids = z.array(z.string().min(1).max(200)).max(1000);

/** `POST /v1/legal-holds`: what to hold (subjects, projects, record ids; at least one) and why. */
export const PlaceLegalHold = z.strictObject({
  scope: z
    .strictObject({ subjects: Ids.optional(), projects: Ids.optional(), recordIds: Ids.optional() })
    .refine((s) => (s.subjects?.length ?? 0) + (s.projects?.length ?? 0) + (s.recordIds?.length ?? 0) > 0, {
      message: 'name at least one subject, project or record id',
    }),
  /** A matter reference, not a narrative: the hold log is kept for audit. */
  reason: z.string().min(1).max(200),
});
export type PlaceLegalHold = z.infer<typeof PlaceLegalHold>;

export interface LegalHold extends PlaceLegalHold {
  id: string;
  placedBy: string;
  placedAt: string;
}

/** Everything the active holds withhold, as one exclusion for the index query. */
export function holdExclusions(holds: Iterable<LegalHold>): ReadExclusions {
  const owners = new Set<string>();
  const projects = new Set<string>();
  const ids = new Set<string>();
  for (const hold of holds) {
    hold.scope.subjects?.forEach((s) => owners.add(s));
    hold.scope.projects?.forEach((p) => projects.add(p));
    hold.scope.recordIds?.forEach((i) => ids.add(i));
  }
  return { owners: [...owners], projects: [...projects], ids: [...ids] };
}

/** What a hold can cover of a record: the record and, through its lineage, everything it derives from. */
export type HoldTarget = LineageTarget;

/**
 * True when any active hold covers the record (it may then be neither erased
 * nor expired, and only the legal role reads it): a hold naming the record,
 * its owner, subject or project, or any of these of any record or event it
 * derives from.
 */
export function isHeld(record: HoldTarget, holds: Iterable<LegalHold>): boolean {
  const keys = new Set(restrictionKeys(record));
  for (const hold of holds) if (exclusionKeys(holdExclusions([hold])).some((key) => keys.has(key))) return true;
  return false;
}
