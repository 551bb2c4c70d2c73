import { ContentErased, factText, type MemoryContent } from '@elma/domain';
import type { PolicyStore } from '../governance/policy-store';
import type { ErasureFingerprints } from './fingerprints';
import type { Tombstones } from './tombstones';

/**
 * The write-side check of re-derivation tombstones, shared by ingest and
 * explicit writes. By default erased content is refused again for the same
 * subject only; a tenant whose policy sets `erasure.tombstoneScope: 'tenant'`
 * refuses it for every subject, so sending it under another subject id does
 * not bring it back.
 */
export class ErasureGuard {
  constructor(private readonly deps: { tombstones: Tombstones; fingerprints: ErasureFingerprints; policies: PolicyStore }) {}

  /** True when this content may not be stored for this subject (consolidation skips it rather than fail). */
  async isErased(tenant: string, subject: string, content: MemoryContent): Promise<boolean> {
    try {
      await this.refuseErased(tenant, [{ path: 'content', subject, content }]);
      return false;
    } catch (error) {
      if (error instanceof ContentErased) return true;
      throw error;
    }
  }

  /** Throws `ContentErased` (naming the first offending path) when any item's content was erased within the tenant's tombstone scope. */
  async refuseErased(tenant: string, items: { path: string; subject: string; content: MemoryContent }[]): Promise<void> {
    const tenantWide = (await this.deps.policies.get(tenant)).erasure.tombstoneScope === 'tenant';
    const { fingerprints } = this.deps;
    const candidates = items.flatMap((item) => {
      const texts = [item.content.text, ...(item.content.fact ? [factText(item.content.fact)] : [])];
      return texts.map((text) => ({
        path: item.path,
        fingerprint: tenantWide ? fingerprints.tenantTombstone(tenant, text) : fingerprints.tombstone(tenant, item.subject, text),
      }));
    });
    const erased = await this.deps.tombstones.matching(
      tenant,
      candidates.map((c) => c.fingerprint),
    );
    const hit = candidates.find((c) => erased.has(c.fingerprint));
    if (hit) throw new ContentErased(hit.path);
  }
}
