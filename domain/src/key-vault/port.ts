export interface DataKeyOptions {
  /** Create the keys these records lack (else a missing key is an error). */
  create: boolean;
  /**
   * Keep the keys this call loads or creates in the vault's bounded cache (default true). A pass that
   * needs each key once, such as the projection working through a backlog, passes false: its keys would
   * push the keys of the events it has yet to read out of the cache, so that every one of them missed.
   * Keys already cached are served either way; a shredded key is never served from the cache.
   */
  keep?: boolean;
}

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
  dataKeys(tenant: string, recordIds: string[], options: DataKeyOptions): Promise<Map<string, Uint8Array>>;

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

/** Where a tenant's key rotation stands. Versions count from 1; `retiring` versions still wrap some rows. */
export interface TenantKeyStatus {
  tenant: string;
  /** The version new data keys and pseudonyms are wrapped under; undefined for a tenant without keys. */
  current: number | undefined;
  /** Older versions that still wrap rows (a rotation is under way until this is empty). */
  retiring: number[];
  /** Rows (data keys plus subject pseudonyms) still wrapped under a retiring version. */
  remaining: number;
}

/**
 * Tenant key rotation without downtime, an optional port beside `KeyVault`
 * (an adapter that cannot rotate simply does not implement it). Data keys and
 * pseudonym rows are re-wrapped under the new tenant key in small batches;
 * data is never re-encrypted, data keys never change, and every other call
 * of the vault keeps working, in every process, during a rotation.
 */
export interface KeyRotation {
  /**
   * Makes a new tenant key version current (new data keys are wrapped under
   * it at once). If a rotation of the tenant is still under way, resumes it
   * instead of adding another version. Throws `TenantDestroyed` for a destroyed tenant.
   */
  beginTenantRotation(tenant: string): Promise<TenantKeyStatus>;
  /**
   * Re-wraps up to `batchSize` rows still under a retiring version, in one
   * atomic write. When none are left, destroys the retiring versions. Idempotent
   * and safe to call from several processes and after a crash.
   */
  rewrapTenant(tenant: string, batchSize: number): Promise<{ rewrapped: number; status: TenantKeyStatus }>;
  tenantKeyStatus(tenant: string): Promise<TenantKeyStatus>;
}

/** The master keys a vault knows by id (a MAC of the key, never the key), and how much still waits for the current one. */
export interface MasterKeyStatus {
  /** The id of the master key new material is wrapped under (ELMA_MASTER_KEY). */
  current: string;
  keys: { id: string; state: 'active' | 'retired'; supplied: boolean }[];
  /** Tenant keys, signing keys and the derivation root still wrapped under another master key. */
  remaining: number;
}

/**
 * Master key rotation of a vault that holds its own key hierarchy: tenant
 * keys (not data keys) are re-wrapped under the current master key in
 * batches; a master key that wraps nothing any more is retired.
 */
export interface MasterKeyRotation {
  /**
   * One batch. `retired` is empty until the batch that leaves nothing under another master key; that batch
   * (and any later call) names every key the rotation to the current key retired, including keys a run cut
   * short after retiring them did not get to report.
   */
  rewrapUnderCurrentMaster(batchSize: number): Promise<{ rewrapped: number; retired: string[]; status: MasterKeyStatus }>;
  masterKeyStatus(): Promise<MasterKeyStatus>;
}

/** A new certificate signing key becomes current; the previous one keeps only its public half (published for verification). */
export interface SigningKeyRotation {
  rotateSigningKey(): Promise<{ kid: string; previous: string }>;
}

/** One rotation as the vault recorded it (ids and counts only). */
export interface RotationRecord {
  id: string;
  kind: 'master' | 'tenant' | 'signing';
  tenant: string | null;
  /** What the rotation moved to: a master key id, `v<N>` of a tenant key, or a signing key id. */
  target: string;
  state: 'running' | 'done';
  startedAt: string;
  finishedAt: string | null;
  rewrapped: number;
}
