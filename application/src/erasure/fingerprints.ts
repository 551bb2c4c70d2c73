import { normalizeForFingerprint } from '@elma/domain';
import { keyedFingerprint } from '@elma/shared';

/**
 * Keyed fingerprints (HMAC-SHA256 under a key derived from the master key) of
 * what erasure must name without keeping: a record's content, a data
 * subject's id. Without the key they cannot be reversed by guessing short
 * texts or known names.
 */
export class ErasureFingerprints {
  constructor(private readonly key: Uint8Array) {}

  /** Of a record's content (certificates, `fingerprint` scopes). */
  content(tenant: string, text: string): string {
    return keyedFingerprint(this.key, 'content.v1', tenant, normalizeForFingerprint(text));
  }

  /** Of a data subject's id (certificates). */
  subject(tenant: string, subject: string): string {
    return keyedFingerprint(this.key, 'subject.v1', tenant, subject);
  }

  /**
   * Re-derivation tombstone: the same content for the same subject. Scoped to
   * the subject so that erasing one person's "thanks" does not forbid anyone
   * else from ever saying it.
   */
  tombstone(tenant: string, subject: string, text: string): string {
    return keyedFingerprint(this.key, 'tombstone.v1', tenant, subject, normalizeForFingerprint(text));
  }

  /**
   * Re-derivation tombstone for the whole tenant: the same content for any
   * subject. Written by every erasure beside the subject's own, and consulted
   * when the tenant's policy scopes tombstones to the tenant.
   */
  tenantTombstone(tenant: string, text: string): string {
    return keyedFingerprint(this.key, 'tombstone.tenant.v1', tenant, normalizeForFingerprint(text));
  }
}
