/**
 * The key vault keeps per-record data keys wrapped by a per-tenant key. The
 * tenant key derives from a master secret plus a per-tenant random salt kept
 * in the vault, so destroying the salt destroys the tenant.
 */
export interface KeyVault {
  /**
   * Returns the data keys of these records, creating the missing ones in one
   * atomic write. Idempotent: a record keeps its key. Throws `KeyShredded` if
   * any record's key was shredded (a shredded record can never get a new key,
   * so its old ciphertext can never be re-encrypted or resurrected).
   */
  dataKeys(tenant: string, recordIds: string[], options: { create: boolean }): Promise<Map<string, Uint8Array>>;

  /** Destroys the data keys of these records physically. Idempotent. */
  shred(tenant: string, recordIds: string[]): Promise<void>;

  /** The ids among these whose data keys have been shredded (all of them for a destroyed tenant). */
  shreddedAmong(tenant: string, recordIds: string[]): Promise<Set<string>>;

  /** True when the record's data key has been shredded. */
  isShredded(tenant: string, recordId: string): Promise<boolean>;

  /** Destroys the tenant's salt and every data key of the tenant. */
  destroyTenant(tenant: string): Promise<void>;

  close(): Promise<void>;
}
