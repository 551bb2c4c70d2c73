import { z } from 'zod';
import type { MemoryRecord } from '../memory/record';
import type { ReadExclusions } from '../policy/clause';

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

/** What a hold can cover of a record. */
export type HoldTarget = Pick<MemoryRecord, 'id' | 'subject'> & { policy: Pick<MemoryRecord['policy'], 'owner' | 'project'> };

/** True when any active hold covers the record (it may then be neither erased nor expired). */
export function isHeld(record: HoldTarget, holds: Iterable<LegalHold>): boolean {
  for (const hold of holds) {
    if (hold.scope.subjects?.includes(record.policy.owner) || hold.scope.subjects?.includes(record.subject)) return true;
    if (record.policy.project && hold.scope.projects?.includes(record.policy.project)) return true;
    if (hold.scope.recordIds?.includes(record.id)) return true;
  }
  return false;
}
