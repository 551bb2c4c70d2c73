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

  /**
   * The random pseudonyms of these data subjects, the only names their
   * streams and holds carry (a keyed hash of the id could be recomputed from
   * the id as long as its key lives; a random value cannot). With `create`,
   * a subject without one gets one, in one atomic write: concurrent first
   * writes of a subject, from any process, all get the same pseudonym.
   * Without it, unmapped subjects are absent from the answer.
   */
  subjectPseudonyms(tenant: string, subjects: string[], options: { create: boolean }): Promise<Map<string, string>>;

  /** The subjects of these pseudonyms, for those still mapped (pseudonym -> subject). */
  subjectsOfPseudonyms(tenant: string, pseudonyms: string[]): Promise<Map<string, string>>;

  /**
   * Destroys the subject's mapping physically and returns the pseudonym it
   * had (undefined when it had none). Nobody can then tell the subject's
   * pseudonym from the subject's id; a later write gets a fresh pseudonym.
   */
  forgetSubject(tenant: string, subject: string): Promise<string | undefined>;

  /** Destroys the tenant's salt, every data key and every subject pseudonym of the tenant. */
  destroyTenant(tenant: string): Promise<void>;

  close(): Promise<void>;
}
