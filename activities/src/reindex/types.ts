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
}
