/**
 * The tenant's views (the index projection), as the reindex needs them. Implemented over the event log and
 * the memory index; everything behind it stays inside the tenant's partition.
 */
export interface TenantViews {
  /**
   * Removes every record of the tenant from the views (index documents, vectors, derived views) and
   * returns how many records were removed. Never touches the event log. Idempotent: dropping an
   * already-empty partition returns 0.
   */
  drop(tenant: string): Promise<number>;

  /**
   * Re-projects the tenant's event log into the views, in log order, with live keys only (records whose
   * data key was shredded stay gone). Returns the events read and the memory records present afterwards.
   * Idempotent: records are upserted by id, so a retry after a partial replay converges to the same views.
   */
  replay(tenant: string): Promise<{ events: number; memories: number }>;

  /**
   * How this index rebuilds: `in_place` (drop, then replay: queries see a partial view meanwhile) or
   * `alias_swap` (a new index is filled beside the live one, then queries switch to it in one step).
   */
  strategy(): 'in_place' | 'alias_swap';

  /**
   * `alias_swap` only: fills a new index from the tenant's log while queries keep using the live one,
   * then switches to it atomically and deletes the old one. Idempotent: a failed attempt leaves the
   * live index in place and removes the half-built one, so a retry starts over.
   */
  rebuildBeside(tenant: string): Promise<{ dropped: number; events: number; memories: number; swap?: { from?: string; to: string } }>;
}
